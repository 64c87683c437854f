package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the in-memory op.Storage of the test authorization server:
// clients, authorization requests, access and refresh tokens. It is the
// zitadel library's extension point; the endpoints, PKCE, client
// authentication and token encoding are the library's.
type storage struct {
	expiresIn time.Duration // the lifetime told to clients

	mu        sync.Mutex
	clients   map[string]*client
	requests  map[string]*authRequest
	codes     map[string]string // code → request id
	tokens    map[string]*token
	refreshes map[string]*refreshToken // by token value
	issued    []string                 // every refresh token value issued
	counts    Counts

	key *rsa.PrivateKey
	kid string
}

// Counts are what the server was asked to do.
type Counts struct {
	Logins, CodeExchanges, Refreshes, ClientCredentials, Introspections int
}

type authRequest struct {
	oidc.AuthRequest
	id       string
	audience []string
	subject  string
	done     bool
	authTime time.Time
}

func (a *authRequest) GetID() string          { return a.id }
func (a *authRequest) GetACR() string         { return "" }
func (a *authRequest) GetAMR() []string       { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string  { return a.audience }
func (a *authRequest) GetAuthTime() time.Time { return a.authTime }
func (a *authRequest) GetClientID() string    { return a.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.CodeChallenge, Method: a.CodeChallengeMethod}
}
func (a *authRequest) GetNonce() string                   { return a.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.Scopes }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }

// token is an access token's server side: valid until revoked or expired
// by the test (its real lifetime is an hour, whatever clients are told).
type token struct {
	id, clientID, subject string
	audience, scopes      []string
	expires               time.Time
	revoked               bool
}

type refreshToken struct {
	value, tokenID, clientID, subject string
	audience, scopes                  []string
	authTime                          time.Time
	revoked                           bool
}

func (r *refreshToken) GetAMR() []string            { return []string{"pwd"} }
func (r *refreshToken) GetAudience() []string       { return r.audience }
func (r *refreshToken) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshToken) GetClientID() string         { return r.clientID }
func (r *refreshToken) GetScopes() []string         { return r.scopes }
func (r *refreshToken) GetSubject() string          { return r.subject }
func (r *refreshToken) SetCurrentScopes(s []string) { r.scopes = s }

// ccRequest is a client-credentials token request.
type ccRequest struct {
	clientID         string
	audience, scopes []string
}

func (c *ccRequest) GetSubject() string    { return c.clientID }
func (c *ccRequest) GetAudience() []string { return c.audience }
func (c *ccRequest) GetScopes() []string   { return c.scopes }

func newStorage(expiresIn time.Duration) (*storage, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &storage{
		expiresIn: expiresIn, clients: map[string]*client{}, requests: map[string]*authRequest{}, codes: map[string]string{},
		tokens: map[string]*token{}, refreshes: map[string]*refreshToken{}, key: key, kid: rand.Text(),
	}, nil
}

// resourceKey carries the request's RFC 8707 resource indicator, which
// the server's middleware reads before the library decodes the request.
type resourceKey struct{}

func resourceOf(ctx context.Context) []string {
	r, _ := ctx.Value(resourceKey{}).([]string)
	return r
}

var errNotFound = errors.New("oauthtest: not found")

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	res := resourceOf(ctx)
	if len(res) != 1 {
		return nil, oidc.ErrInvalidRequest().WithDescription("exactly one resource indicator (RFC 8707) is required")
	}
	a := &authRequest{AuthRequest: *req, id: rand.Text(), audience: res, subject: userID}
	s.mu.Lock()
	s.requests[a.id] = a
	s.mu.Unlock()
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return nil, errNotFound
	}
	return a, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.counts.CodeExchanges++
	s.mu.Unlock()
	if !ok {
		return nil, errNotFound
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// approve marks an authorization request signed in by subject (the test
// user, auto-approved).
func (s *storage) approve(id, subject string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return errNotFound
	}
	a.done, a.subject, a.authTime = true, subject, time.Now()
	s.counts.Logins++
	return nil
}

func (s *storage) newToken(clientID, subject string, audience, scopes []string) (*token, time.Time) {
	t := &token{id: rand.Text(), clientID: clientID, subject: subject, audience: audience, scopes: scopes, expires: time.Now().Add(time.Hour)}
	s.tokens[t.id] = t
	return t, time.Now().Add(s.expiresIn)
}

func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clientID := ""
	switch r := req.(type) {
	case *authRequest:
		clientID = r.ClientID
	case *ccRequest:
		clientID = r.clientID
		s.counts.ClientCredentials++
	}
	t, exp := s.newToken(clientID, req.GetSubject(), req.GetAudience(), req.GetScopes())
	return t.id, exp, nil
}

// CreateAccessAndRefreshTokens issues a new pair and, on a refresh,
// revokes the refresh token used: refresh tokens rotate (OAuth 2.1 §4.3.1
// for public clients).
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var clientID string
	var authTime time.Time
	switch r := req.(type) {
	case *authRequest:
		clientID, authTime = r.ClientID, r.authTime
	case *refreshToken:
		clientID, authTime = r.clientID, r.authTime
		old, ok := s.refreshes[current]
		if !ok || old.revoked {
			return "", "", time.Time{}, oidc.ErrInvalidGrant()
		}
		old.revoked = true
		s.counts.Refreshes++
	}
	t, exp := s.newToken(clientID, req.GetSubject(), req.GetAudience(), req.GetScopes())
	rt := &refreshToken{value: rand.Text() + rand.Text(), tokenID: t.id, clientID: clientID, subject: req.GetSubject(), audience: req.GetAudience(), scopes: req.GetScopes(), authTime: authTime}
	s.refreshes[rt.value] = rt
	s.issued = append(s.issued, rt.value)
	return t.id, rt.value, exp, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, value string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshes[value]
	if !ok || rt.revoked {
		return nil, oidc.ErrInvalidGrant().WithDescription("the refresh token is unknown, used or revoked")
	}
	c := *rt
	return &c, nil
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The library hands a refresh token over as the id of the access
	// token issued with it: revoke both, and the grant's refresh token
	// (RFC 7009 §2.1).
	if t, ok := s.tokens[tokenOrID]; ok {
		t.revoked = true
	}
	for _, rt := range s.refreshes {
		if rt.value == tokenOrID || rt.tokenID == tokenOrID {
			rt.revoked = true
		}
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, value string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refreshes[value]
	if !ok {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rt.subject, rt.tokenID, nil
}

// revokeAll revokes every access and refresh token.
func (s *storage) revokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.revoked = true
	}
	for _, rt := range s.refreshes {
		rt.revoked = true
	}
}

// expireAll ends every access token now (refresh tokens stay).
func (s *storage) expireAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.expires = time.Now().Add(-time.Second)
	}
}

type signingKey struct{ s *storage }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return k.s.kid }

type publicKey struct{ s *storage }

func (k publicKey) ID() string                         { return k.s.kid }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.s.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s}, nil }
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{s}}, nil }

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errNotFound
	}
	return c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.secret == "" || c.secret != secret {
		return errors.New("oauthtest: client authentication failed")
	}
	return nil
}

// ClientCredentials authenticates a machine client.
func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.GetClientByClientID(ctx, id)
}

// ClientCredentialsTokenRequest requires a resource indicator too.
func (s *storage) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	res := resourceOf(ctx)
	if len(res) != 1 {
		return nil, oidc.ErrInvalidRequest().WithDescription("exactly one resource indicator (RFC 8707) is required")
	}
	return &ccRequest{clientID: id, audience: res, scopes: scopes}, nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	info.Subject = subject
	return nil
}

// SetIntrospectionFromToken answers the resource server's introspection:
// an error (inactive) for a token unknown, revoked or expired.
func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Introspections++
	t, ok := s.tokens[tokenID]
	if !ok || t.revoked || time.Now().After(t.expires) || t.subject != subject {
		return errors.New("oauthtest: token inactive")
	}
	resp.Subject, resp.ClientID, resp.Audience, resp.Scope = t.subject, t.clientID, slices.Clone(t.audience), slices.Clone(t.scopes)
	resp.Expiration = oidc.FromTime(t.expires)
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s *storage) Health(context.Context) error { return nil }

// client is a registered client.
type client struct {
	id, secret string
	appType    op.ApplicationType
	method     oidc.AuthMethod
	grants     []oidc.GrantType
	redirects  []string
	loginURL   func(string) string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return c.appType }
func (c *client) AuthMethod() oidc.AuthMethod         { return c.method }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType         { return c.grants }
func (c *client) LoginURL(id string) string            { return c.loginURL(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
