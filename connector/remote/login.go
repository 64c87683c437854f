package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/tokenstore"
)

// LoginOptions tune a person's OAuth login.
type LoginOptions struct {
	// Tokens is where the tokens are stored (required).
	Tokens *tokenstore.Store
	// Show gives the person the authorization URL to open (it holds no
	// secret: the state and the PKCE challenge are single-use).
	Show func(authorizationURL string)
	// Wait bounds how long the person has to sign in; 0 is
	// DefaultLoginWait.
	Wait time.Duration
}

// Login runs the OAuth 2.1 authorization-code flow for the remote
// server r (nil: not a remote server, refused) and stores the tokens sealed in opts.Tokens. It goes
// through the go-sdk: the server's 401 starts its AuthorizationCodeHandler,
// which discovers the protected-resource and authorization-server
// metadata, uses the Client ID Metadata Document or pre-registered client
// id (dynamic registration only when no client id is given), sends PKCE
// (S256), state and the resource indicator, and exchanges the code with
// golang.org/x/oauth2. The code comes back to a loopback listener that
// takes only an answer carrying the request's state, for at most
// opts.Wait. Nothing is stored unless the server then accepts the token.
// The flow rides on an MCP initialize handshake run by client, the client
// every session speaks with.
func Login(ctx context.Context, remote *Config, client *mcp.Client, opts LoginOptions) error {
	if remote == nil {
		return blocking.New(blocking.OAuthNotConfigured, "the connection is not a remote server")
	}
	r, err := Normalize(*remote)
	if err != nil {
		return err
	}
	if r.OAuth == nil || r.OAuth.Grant != GrantAuthorizationCode {
		return blocking.New(blocking.OAuthNotConfigured, "the connection has no OAuth authorization-code login")
	}
	if opts.Tokens == nil || opts.Show == nil {
		return blocking.New(blocking.OAuthNotConfigured, "no token store or way to show the URL was given")
	}
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultLoginWait
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.OAuth.RedirectPort)))
	if err != nil {
		return blocking.New(blocking.OAuthLoginFailed, "the loopback redirect port cannot be listened on")
	}
	redirect := "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + CallbackPath
	cb := newCallback(ln)
	defer cb.close()

	httpClient, base, err := newHTTP(r)
	if err != nil {
		return err
	}
	defer base.CloseIdleConnections()
	oauthClient := newOAuthHTTP(base)
	var (
		mu      sync.Mutex
		granted *storedGrant
		shown   bool
	)
	handlerCfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		Client:              oauthClient,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(fctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			mu.Lock()
			shown = true
			mu.Unlock()
			return cb.await(fctx, args.URL, opts.Show, wait)
		},
		NewTokenSource: func(tctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			granted = &storedGrant{Resource: r.URL, Grant: GrantAuthorizationCode, TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, ClientID: c.ClientID, ClientSecret: c.ClientSecret, Token: tok}
			mu.Unlock()
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if len(r.OAuth.Scopes) > 0 {
		scopes := r.OAuth.Scopes
		handlerCfg.ScopeFilter = func([]string) []string { return scopes }
	}
	switch id := r.OAuth.ClientID; {
	case id == "":
		handlerCfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"}, ClientName: "oa", Scope: strings.Join(r.OAuth.Scopes, " "),
		}}
	default:
		handlerCfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id}
		if u, err := url.Parse(id); err == nil && u.Scheme == "https" && u.Path != "" && u.Path != "/" {
			handlerCfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: id}
		}
	}
	handler, err := auth.NewAuthorizationCodeHandler(handlerCfg)
	if err != nil {
		return blocking.New(blocking.OAuthLoginFailed, "the login could not be set up")
	}
	lctx, cancel := context.WithTimeout(ctx, wait+2*oauthRequestTimeout)
	defer cancel()
	tctx, tr := withTrace(lctx)
	transport := &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: httpClient, OAuthHandler: handler, MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: maxBody}
	cs, err := client.Connect(tctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocolVersion})
	if err == nil {
		_ = cs.Close()
	}
	mu.Lock()
	g, asked := granted, shown
	mu.Unlock()
	switch {
	case cb.refusal() != nil:
		return cb.refusal()
	case err != nil && oversized(oauthClient, nil):
		return tooLarge()
	case err != nil && !asked:
		if _, code := tr.state(); code == blocking.RemoteUnreachable || code == blocking.RemoteTLSUntrusted || code == blocking.ConnectorSecretUnavailable {
			return refusalFor(code, true)
		}
		return blocking.New(blocking.OAuthDiscoveryFailed, "the server's OAuth metadata could not be found or verified, or no client could be registered")
	case err != nil && g == nil:
		return blocking.New(blocking.OAuthLoginFailed, "the authorization server did not exchange the code for a token")
	case err != nil:
		return blocking.New(blocking.OAuthLoginFailed, "the server did not accept the token it was issued")
	case g == nil:
		return blocking.New(blocking.OAuthLoginFailed, "the server accepted requests without a token: the connection needs no --oauth")
	}
	unlock, err := opts.Tokens.Lock()
	if err != nil {
		return storeRefusal(err)
	}
	defer unlock()
	if err := saveGrant(opts.Tokens, g); err != nil {
		return storeRefusal(err)
	}
	return nil
}

// callback is the login's loopback redirect: it serves CallbackPath and
// hands the first answer carrying the request's state to await.
type callback struct {
	srv    *http.Server
	mu     sync.Mutex
	state  string
	answer chan url.Values
	err    error
}

func newCallback(ln net.Listener) *callback {
	c := &callback{answer: make(chan url.Values, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, c.serve)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = c.srv.Serve(ln) }()
	return c
}

func (c *callback) close() { _ = c.srv.Close() }

// serve takes one answer: a query with the expected state, carrying a code
// or an error. Anything else is answered 400 and ignored, so a stray or
// forged request cannot end the login.
func (c *callback) serve(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	c.mu.Lock()
	want := c.state
	c.mu.Unlock()
	if want == "" || q.Get("state") != want || (q.Get("code") == "" && q.Get("error") == "") {
		http.Error(w, "This is not the answer oa is waiting for.", http.StatusBadRequest)
		return
	}
	select {
	case c.answer <- q:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("oa received the answer; you can close this window.\n"))
	default:
		http.Error(w, "oa already has an answer.", http.StatusConflict)
	}
}

// await shows the authorization URL and waits at most wait for the answer.
func (c *callback) await(ctx context.Context, authURL string, show func(string), wait time.Duration) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		return nil, c.fail(blocking.New(blocking.OAuthLoginFailed, "the authorization URL holds no state"))
	}
	c.mu.Lock()
	c.state = u.Query().Get("state")
	c.mu.Unlock()
	show(authURL)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case q := <-c.answer:
		if e := q.Get("error"); e != "" {
			return nil, c.fail(blocking.New(blocking.OAuthLoginDenied, "the redirect carried the error %s", safeWord(e)))
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	case <-timer.C:
		return nil, c.fail(blocking.New(blocking.OAuthLoginTimeout, "no answer reached the redirect within %s", wait))
	case <-ctx.Done():
		return nil, c.fail(blocking.New(blocking.OAuthLoginTimeout, "the login was cancelled or ran out of time"))
	}
}

func (c *callback) fail(err error) error {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	return err
}

func (c *callback) refusal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// safeWord keeps an OAuth error code (RFC 6749: printable ASCII without
// quote or backslash) short and shown only when it is one.
func safeWord(s string) string {
	if len(s) > 64 || !validScope(s) {
		return "(not an OAuth error code)"
	}
	return s
}

// LogoutResult is what Logout did.
type LogoutResult struct {
	// Removed is whether a login was stored (and is now removed).
	Removed bool `json:"removed"`
	// Revoked is whether the authorization server confirmed revoking the
	// refresh token (RFC 7009); false when it offers no revocation
	// endpoint or did not answer, which leaves the token to expire there.
	Revoked bool `json:"revoked"`
}

// Logout removes the stored login of the remote server r and, first, asks the
// authorization server to revoke its refresh token where the server's
// metadata names a revocation endpoint (RFC 7009; bounded like every
// OAuth request). The file is removed whatever the server says.
func Logout(ctx context.Context, r *Config, store *tokenstore.Store) (LogoutResult, error) {
	unlock, err := store.Lock()
	if err != nil {
		return LogoutResult{}, storeRefusal(err)
	}
	defer unlock()
	var res LogoutResult
	if g, err := loadGrant(store); err == nil && g.Token.RefreshToken != "" && r != nil {
		res.Revoked = revoke(ctx, *r, g)
	}
	if res.Removed, err = store.Delete(); err != nil {
		return res, storeRefusal(err)
	}
	return res, nil
}

// revoke asks the authorization server to revoke g's refresh token, and
// with it (RFC 7009 §2.1) the access tokens issued from it. Neither the
// go-sdk nor golang.org/x/oauth2 has a revocation call; this is its one
// form POST.
func revoke(ctx context.Context, r Config, g *storedGrant) bool {
	r, err := Normalize(r)
	if err != nil || r.URL != g.Resource {
		return false
	}
	_, base, err := newHTTP(r)
	if err != nil {
		return false
	}
	defer base.CloseIdleConnections()
	client := newOAuthHTTP(base)
	ctx, cancel := context.WithTimeout(ctx, oauthRequestTimeout)
	defer cancel()
	_, asm, err := discover(ctx, client, g.Resource)
	if err != nil || asm.RevocationEndpoint == "" {
		return false
	}
	form := url.Values{"token": {g.Token.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {g.ClientID}}
	if g.ClientSecret != "" {
		form.Set("client_secret", g.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// LoginState is what can be said of a connection's stored login without
// showing any of it.
type LoginState struct {
	// Stored is whether a login (or a client-credentials token) is stored
	// for the connection's URL.
	Stored bool `json:"stored"`
	// Refreshable is whether it holds a refresh token.
	Refreshable bool `json:"refreshable,omitempty"`
	// AccessExpiry is when the stored access token expires (zero: unknown
	// or none).
	AccessExpiry time.Time `json:"accessExpiry,omitempty"`
	// Problem names why a stored login cannot be used ("" when it can).
	Problem blocking.Code `json:"problem,omitempty"`
}

// StoredLogin reports the state of the login stored for the OAuth server r
// (nil: not a remote server); it reads the store and sends nothing.
func StoredLogin(r *Config, store *tokenstore.Store) LoginState {
	g, err := loadGrant(store)
	switch {
	case errors.Is(err, tokenstore.ErrNone):
		return LoginState{}
	case err != nil:
		return LoginState{Problem: blocking.OAuthTokenStoreInvalid}
	case r == nil || g.Resource != r.URL:
		return LoginState{Problem: blocking.RemoteLoginRequired}
	}
	return LoginState{Stored: true, Refreshable: g.Token.RefreshToken != "", AccessExpiry: g.Token.Expiry.UTC().Truncate(time.Second)}
}
