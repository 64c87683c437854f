package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/tokenstore"
)

// OAuth is how a remote connection obtains OAuth 2.1 access tokens.
// It names no secret: a client secret is read from its 0600 file when a
// token is requested, and tokens live sealed in the host's token store
// (internal/tokenstore), never in the connection's record.
type OAuth struct {
	// Grant is GrantAuthorizationCode (a person logs in with oa connection
	// login) or GrantClientCredentials (a machine host; chosen when a
	// client secret file is given). Derived by Normalize.
	Grant string `json:"grant"`
	// ClientID is the client registered at the authorization server, or
	// the https URL of its Client ID Metadata Document. "" registers a
	// client dynamically at login, where the server offers that.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretFile is a 0600 file holding the client secret of a
	// client-credentials connection.
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	// Scopes are the scopes requested; none asks for what the server's
	// metadata lists.
	Scopes []string `json:"scopes,omitempty"`
	// RedirectPort is the loopback port of the login's redirect
	// (http://127.0.0.1:PORT/callback); 0 picks a free one, which an
	// authorization server following RFC 8252 accepts for a native client.
	RedirectPort int `json:"redirectPort,omitempty"`
}

// OAuth grants of a remote connection.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Bounds of every OAuth exchange: one request (discovery, token, refresh)
// takes at most oauthRequestTimeout and reads at most maxOAuthBody; a login
// waits for the person at most DefaultLoginWait unless told otherwise.
const (
	oauthRequestTimeout = 30 * time.Second
	maxOAuthBody        = 1 << 20
	// DefaultLoginWait bounds how long Login waits for the redirect.
	DefaultLoginWait = 5 * time.Minute
	// CallbackPath is the path of the login's loopback redirect.
	CallbackPath = "/callback"
	maxClientID  = 512
	maxScopes    = 32
)

// normalizeOAuth checks the OAuth settings of r, deriving the grant.
func normalizeOAuth(r *Config, bad func(path, format string, args ...any)) {
	o := r.OAuth
	if r.BearerSecretFile != "" {
		bad("bearerSecretFile", "an OAuth connection gets its bearer token from the authorization server: give --oauth or --bearer-secret-file, not both")
	}
	o.Grant = GrantAuthorizationCode
	if o.ClientSecretFile != "" {
		o.Grant = GrantClientCredentials
		if o.ClientID == "" {
			bad("oauth.clientId", "a client-credentials connection (--oauth-client-secret-file) needs its --oauth-client-id")
		}
		if o.RedirectPort != 0 {
			bad("oauth.redirectPort", "--oauth-redirect-port is for a person's login; a client-credentials connection has no redirect")
		}
	}
	if len(o.ClientID) > maxClientID || strings.ContainsFunc(o.ClientID, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		bad("oauth.clientId", "a client id is at most %d printable characters without spaces", maxClientID)
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		bad("oauth.redirectPort", "a port is 1 to 65535 (0 picks a free one)")
	}
	if len(o.Scopes) > maxScopes {
		bad("oauth.scopes", "at most %d scopes", maxScopes)
	}
	for i, s := range o.Scopes {
		if !validScope(s) {
			bad("oauth.scopes["+strconv.Itoa(i)+"]", "a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 scope-token)")
		}
	}
	r.Auth = AuthOAuth
}

// validScope reports whether s is an RFC 6749 scope-token.
func validScope(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

// storedGrant is what the token store keeps for a connection: the tokens
// and what refreshing them needs. It is sealed on disk and never leaves
// this package.
type storedGrant struct {
	// Resource is the connection URL the grant was made for; a grant for
	// another URL is never sent.
	Resource     string           `json:"resource"`
	Grant        string           `json:"grant"`
	TokenURL     string           `json:"tokenUrl"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle"`
	ClientID     string           `json:"clientId"`
	ClientSecret string           `json:"clientSecret,omitempty"` // a dynamically registered client's
	Audience     string           `json:"audience,omitempty"`     // the resource indicator sent (RFC 8707)
	Token        *oauth2.Token    `json:"token"`
}

func loadGrant(s *tokenstore.Store) (*storedGrant, error) {
	plain, err := s.Get()
	if err != nil {
		return nil, err
	}
	var g storedGrant
	if err := json.Unmarshal(plain, &g); err != nil || g.Token == nil {
		return nil, tokenstore.ErrInvalid
	}
	return &g, nil
}

func saveGrant(s *tokenstore.Store, g *storedGrant) error {
	plain, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return s.Put(plain)
}

// storeRefusal is the refusal for a token store that failed.
func storeRefusal(err error) error {
	if errors.Is(err, tokenstore.ErrNone) {
		return blocking.New(blocking.RemoteLoginRequired, "no OAuth login is stored for this connection")
	}
	if errors.Is(err, tokenstore.ErrLockTimeout) {
		return blocking.New(blocking.OAuthTokenStoreInvalid, "another process held the connection's token lock too long")
	}
	return blocking.New(blocking.OAuthTokenStoreInvalid, "the connection's token file or the host's token key cannot be used")
}

// newOAuthHTTP is the client of a connection's OAuth exchanges (discovery,
// registration, tokens): the session's transport (same TLS trust), none
// of the connection's secret headers, every request bounded in time and
// every body in size, no redirects followed.
func newOAuthHTTP(base *http.Transport) *http.Client {
	return &http.Client{
		Transport: cappedTransport{base: base, big: new(atomic.Bool)},
		Timeout:   oauthRequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// cappedTransport reads each answer whole, up to maxOAuthBody: an answer
// over it fails the request with errOAuthTooLarge and is remembered
// (oversized), since the libraries reading these answers stop at the
// same size and report a truncated answer as if it were garbled.
type cappedTransport struct {
	base http.RoundTripper
	big  *atomic.Bool
}

var errOAuthTooLarge = errors.New("connector: OAuth answer over the size limit")

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxOAuthBody {
		t.big.Store(true)
		return nil, errOAuthTooLarge
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp, nil
}

// oversized reports whether an OAuth client made by newOAuthHTTP was sent
// an answer over maxOAuthBody, or err says so.
func oversized(c *http.Client, err error) bool {
	if errors.Is(err, errOAuthTooLarge) {
		return true
	}
	t, ok := c.Transport.(cappedTransport)
	return ok && t.big.Load()
}

// tooLarge is the refusal for an OAuth answer over maxOAuthBody.
func tooLarge() error {
	return blocking.New(blocking.OAuthAnswerTooLarge, "an answer of the authorization server was larger than %d bytes", maxOAuthBody)
}

// oauthSource hands a remote session's requests their access token: the
// one in memory while it is valid, else the stored one, refreshed (or, for
// client credentials, fetched again) under the connection's lock and
// stored rotated. It never retries: a token that cannot be had is a
// refusal for the request, which is then not sent.
type oauthSource struct {
	remote Config
	store  *tokenstore.Store
	client *http.Client

	mu  sync.Mutex
	cur *oauth2.Token
}

// token returns the access token to send, or the refusal that explains why
// there is none.
func (o *oauthSource) token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur.Valid() {
		return o.cur.AccessToken, nil
	}
	if o.store == nil {
		return "", blocking.New(blocking.RemoteLoginRequired, "this process has no token store for the connection")
	}
	unlock, err := o.store.Lock()
	if err != nil {
		return "", storeRefusal(err)
	}
	defer unlock()
	g, err := loadGrant(o.store)
	switch {
	case errors.Is(err, tokenstore.ErrNone) && o.remote.OAuth.Grant == GrantClientCredentials:
		g = nil
	case err != nil:
		return "", storeRefusal(err)
	case g.Resource != o.remote.URL || g.Grant != o.remote.OAuth.Grant:
		return "", blocking.New(blocking.RemoteLoginRequired, "the stored login is for another URL or grant of this connection")
	case g.Token.Valid():
		o.cur = g.Token
		return g.Token.AccessToken, nil
	}
	ctx, cancel := context.WithTimeout(ctx, oauthRequestTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.client)
	if o.remote.OAuth.Grant == GrantClientCredentials {
		g, err = o.clientCredentials(ctx, g)
	} else {
		g, err = o.refresh(ctx, g)
	}
	if err != nil {
		return "", err
	}
	if err := saveGrant(o.store, g); err != nil {
		return "", storeRefusal(err)
	}
	o.cur = g.Token
	return g.Token.AccessToken, nil
}

// refresh exchanges the stored refresh token for new tokens (the new
// refresh token replaces the old one when the server rotates it).
func (o *oauthSource) refresh(ctx context.Context, g *storedGrant) (*storedGrant, error) {
	if g.Token.RefreshToken == "" {
		return nil, blocking.New(blocking.RemoteLoginRequired, "the access token expired and the login holds no refresh token")
	}
	cfg := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
	tok, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: g.Token.RefreshToken}).Token()
	if err != nil {
		return nil, o.tokenRefusal(err, true)
	}
	next := *g
	next.Token = tok
	return &next, nil
}

// clientCredentials obtains a token with the client's id and secret,
// discovering the token endpoint first when no grant is stored.
func (o *oauthSource) clientCredentials(ctx context.Context, g *storedGrant) (*storedGrant, error) {
	if g == nil {
		prm, asm, err := discover(ctx, o.client, o.remote.URL)
		if err != nil {
			return nil, err
		}
		g = &storedGrant{Resource: o.remote.URL, Grant: GrantClientCredentials, TokenURL: asm.TokenEndpoint, AuthStyle: tokenAuthStyle(asm.TokenEndpointAuthMethodsSupported), ClientID: o.remote.OAuth.ClientID, Audience: prm.Resource}
	}
	secret, err := readSecretValue(o.remote.OAuth.ClientSecretFile)
	if err != nil {
		return nil, err
	}
	cfg := &clientcredentials.Config{ClientID: g.ClientID, ClientSecret: secret, TokenURL: g.TokenURL, Scopes: o.remote.OAuth.Scopes, AuthStyle: g.AuthStyle}
	if g.Audience != "" {
		cfg.EndpointParams = url.Values{"resource": {g.Audience}}
	}
	tok, err := cfg.Token(ctx)
	if err != nil {
		return nil, o.tokenRefusal(err, false)
	}
	next := *g
	next.Token = tok
	return &next, nil
}

// reject forgets an access token the server answered 401 to, in memory
// and in the store, so the next session refreshes (or is told to log in)
// instead of sending it again.
func (o *oauthSource) reject(access string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur != nil && o.cur.AccessToken == access {
		o.cur = nil
	}
	if o.store == nil {
		return
	}
	unlock, err := o.store.Lock()
	if err != nil {
		return
	}
	defer unlock()
	g, err := loadGrant(o.store)
	if err != nil || g.Token.AccessToken != access {
		return
	}
	g.Token = &oauth2.Token{RefreshToken: g.Token.RefreshToken, TokenType: g.Token.TokenType, Expiry: time.Unix(1, 0)}
	_ = saveGrant(o.store, g)
}

// tokenRefusal explains a failed token request without its text: an
// answer too large is that, whatever the library made of it; else as
// tokenRefusal.
func (o *oauthSource) tokenRefusal(err error, refresh bool) error {
	if oversized(o.client, err) {
		return tooLarge()
	}
	return tokenRefusal(err, refresh)
}

// tokenRefusal explains a failed token request without its text (which
// can quote the server): refused grants ask for a login, a refused client
// is the client's, anything that is not an answer is the server's absence.
func tokenRefusal(err error, refresh bool) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch re.ErrorCode {
		case "invalid_client", "unauthorized_client":
			return blocking.New(blocking.OAuthClientRefused, "the authorization server answered %s", re.ErrorCode)
		case "invalid_grant":
			if refresh {
				return blocking.New(blocking.RemoteLoginRequired, "the refresh token expired or was revoked")
			}
		}
		if re.Response != nil && re.Response.StatusCode >= 500 {
			return blocking.New(blocking.OAuthServerUnreachable, "the token endpoint answered HTTP %d", re.Response.StatusCode)
		}
		if refresh {
			return blocking.New(blocking.RemoteLoginRequired, "the authorization server refused to refresh the token")
		}
		return blocking.New(blocking.OAuthClientRefused, "the authorization server refused the token request")
	}
	return blocking.New(blocking.OAuthServerUnreachable, "the token endpoint could not be reached or did not answer in time")
}

// tokenAuthStyle is how the client authenticates at the token endpoint:
// client_secret_post where offered (OAuth 2.1's preference), else basic.
func tokenAuthStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// discover reads the server's protected-resource metadata (RFC 9728) at
// the well-known locations the MCP authorization spec names (the
// endpoint's path inserted, then the root) and its first authorization
// server's metadata (RFC 8414 or OpenID discovery), both through the
// go-sdk, which checks the resource, the issuer, PKCE and the URL schemes.
func discover(ctx context.Context, c *http.Client, resource string) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	u, err := url.Parse(resource)
	if err != nil {
		return nil, nil, blocking.New(blocking.OAuthDiscoveryFailed, "the connection's URL does not parse")
	}
	root := *u
	root.Path, root.RawPath, root.RawQuery = "", "", ""
	at := root
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	top := root
	top.Path = "/.well-known/oauth-protected-resource"
	var prm *oauthex.ProtectedResourceMetadata
	for _, try := range []struct{ meta, resource string }{{at.String(), resource}, {top.String(), root.String()}} {
		if prm, err = oauthex.GetProtectedResourceMetadata(ctx, try.meta, try.resource, c); err == nil && prm != nil {
			break
		}
	}
	if prm == nil || len(prm.AuthorizationServers) == 0 {
		if oversized(c, err) {
			return nil, nil, tooLarge()
		}
		if ctx.Err() != nil || isNetErr(err) {
			return nil, nil, blocking.New(blocking.OAuthServerUnreachable, "the server's OAuth metadata could not be read")
		}
		return nil, nil, blocking.New(blocking.OAuthDiscoveryFailed, "no protected-resource metadata naming an authorization server was found for the URL")
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c)
	if err != nil || asm == nil || asm.TokenEndpoint == "" {
		if oversized(c, err) {
			return nil, nil, tooLarge()
		}
		if ctx.Err() != nil || isNetErr(err) {
			return nil, nil, blocking.New(blocking.OAuthServerUnreachable, "the authorization server's metadata could not be read")
		}
		return nil, nil, blocking.New(blocking.OAuthDiscoveryFailed, "the authorization server's metadata is missing or did not verify")
	}
	return prm, asm, nil
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}
