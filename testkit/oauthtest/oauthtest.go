// Package oauthtest runs, on loopback, a real OAuth 2.1 authorization
// server (zitadel/oidc's op provider over an in-memory storage written
// here, the library's extension point) in front of a go-sdk Streamable
// HTTP MCP server protected by the go-sdk's bearer-token middleware
// (auth.RequireBearerToken), whose verifier introspects each token at the
// authorization server (zitadel's resource-server client) and checks its
// audience against the server's resource. The MCP server publishes its
// protected-resource metadata (RFC 9728) with the go-sdk's handler.
//
// The authorization server signs in the test user on its own (no login
// page), so a test follows the authorization URL with an HTTP client to
// complete a login. It requires an RFC 8707 resource indicator on every
// authorization and client-credentials request, rotates refresh tokens,
// and lets a test revoke or expire tokens and change the audience the MCP
// server accepts.
package oauthtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/pkg/client/rs"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Registered clients and the test user.
const (
	// PublicClient is a native public client (PKCE, no secret) whose
	// redirect is http://127.0.0.1/callback on any port.
	PublicClient = "oa-cli"
	// MachineClient and MachineSecret are a confidential client allowed
	// the client-credentials grant.
	MachineClient = "oa-machine"
	MachineSecret = "machine-secret-4f1c9a"
	// TestUser is who the server signs in.
	TestUser = "ada"
	// Scope is the scope the MCP server's metadata lists.
	Scope = "mcp:read"
	// ToolName is the MCP server's one tool (read-only).
	ToolName = "lookup"

	rsClient = "mcp-rs"
	rsSecret = "rs-secret-77d2"
)

// Options tune the servers.
type Options struct {
	// ExpiresIn is the access-token lifetime the authorization server
	// tells clients (default an hour; under 10s a golang.org/x/oauth2
	// client refreshes before its next request, and at least 2s, as the
	// library tells whole seconds and 0 means no expiry). Tokens stay valid on the server for
	// an hour whatever it says, unless Expire or Revoke is called, so a
	// client told a short lifetime refreshes early without a test racing
	// the clock.
	ExpiresIn time.Duration
	// Server, when set, is the MCP server to protect instead of the
	// built-in one with its lookup tool.
	Server *mcp.Server
	// TokenAnswerBytes, when set, makes the token endpoint answer every
	// request 200 with a well-formed token answer of about that many
	// bytes (its access token padded) instead of issuing a token.
	TokenAnswerBytes int
}

// Server is the pair of servers.
type Server struct {
	// Issuer is the authorization server's issuer URL.
	Issuer string
	// MCPURL is the protected MCP endpoint.
	MCPURL string

	st       *storage
	mu       sync.Mutex
	audience string
	rs       rs.ResourceServer
	seen     []string // every bearer token the MCP server was sent
}

// Start runs both servers until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.ExpiresIn <= 0 {
		opts.ExpiresIn = time.Hour
	}
	st, err := newStorage(opts.ExpiresIn)
	if err != nil {
		t.Fatal(err)
	}
	asLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Issuer: "http://" + asLn.Addr().String(), st: st}
	login := func(id string) string { return s.Issuer + "/login?id=" + id }
	st.clients[PublicClient] = &client{id: PublicClient, appType: op.ApplicationTypeNative, method: oidc.AuthMethodNone,
		grants: []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}, redirects: []string{"http://127.0.0.1/callback"}, loginURL: login}
	st.clients[MachineClient] = &client{id: MachineClient, secret: MachineSecret, appType: op.ApplicationTypeWeb, method: oidc.AuthMethodPost,
		grants: []oidc.GrantType{oidc.GrantTypeClientCredentials}, loginURL: login}
	st.clients[rsClient] = &client{id: rsClient, secret: rsSecret, appType: op.ApplicationTypeWeb, method: oidc.AuthMethodBasic, loginURL: login}

	var key [32]byte
	copy(key[:], []byte("oauthtest-crypto-key-32-bytes!!!"))
	provider, err := op.NewProvider(&op.Config{CryptoKey: key, CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true},
		st, op.StaticIssuer(s.Issuer), op.WithAllowInsecure(), op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if err := st.approve(id, TestUser); err != nil {
			http.Error(w, "unknown request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, op.AuthCallbackURL(provider)(op.ContextWithIssuer(r.Context(), s.Issuer), id), http.StatusFound)
	})
	mux.Handle("/", withResource(provider))
	if opts.TokenAnswerBytes > 0 {
		mux.HandleFunc("POST /oauth/token", oversizedToken(opts.TokenAnswerBytes))
	}
	as := &httptest.Server{Listener: asLn, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	as.Start()
	t.Cleanup(as.Close)

	mcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + mcpLn.Addr().String()
	s.MCPURL, s.audience = base+"/mcp", base+"/mcp"
	prmURL := base + "/.well-known/oauth-protected-resource/mcp"
	server := opts.Server
	if server == nil {
		server = newMCPServer()
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mmux := http.NewServeMux()
	mmux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.MCPURL, AuthorizationServers: []string{s.Issuer}, ScopesSupported: []string{Scope}, ResourceName: "oauthtest",
	}))
	mmux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(mcpHandler))
	ms := &httptest.Server{Listener: mcpLn, Config: &http.Server{Handler: mmux, ReadHeaderTimeout: 10 * time.Second}}
	ms.Start()
	t.Cleanup(ms.Close)
	return s
}

// oversizedToken answers a token request with a token answer of about n
// bytes.
func oversizedToken(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, `{"token_type":"Bearer","expires_in":3600,"access_token":"`+strings.Repeat("A", n)+`"}`)
	}
}

// withResource reads the RFC 8707 resource indicators of a request into
// its context for the storage (the library does not parse them).
func withResource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil && len(r.Form["resource"]) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, r.Form["resource"]))
		}
		next.ServeHTTP(w, r)
	})
}

// verify is the MCP server's token verifier: the token introspected at
// the authorization server (zitadel's resource-server client), active,
// and issued for this server's resource.
func (s *Server) verify(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	if s.rs == nil {
		r, err := rs.NewResourceServerClientCredentials(ctx, s.Issuer, rsClient, rsSecret)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.rs = r
	}
	r, audience := s.rs, s.audience
	s.seen = append(s.seen, tok)
	s.mu.Unlock()
	resp, err := rs.Introspect[*oidc.IntrospectionResponse](ctx, r, tok)
	if err != nil || !resp.Active || !oauthex.MatchesResource(resp.Audience, audience) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: resp.Scope, Expiration: resp.Expiration.AsTime(), UserID: resp.Subject}, nil
}

// Revoke revokes every access and refresh token issued.
func (s *Server) Revoke() { s.st.revokeAll() }

// Expire ends every access token issued (refresh tokens stay valid).
func (s *Server) Expire() { s.st.expireAll() }

// SetAudience makes the MCP server accept only tokens issued for
// audience: with another server's URL, oa's tokens are for the wrong
// audience.
func (s *Server) SetAudience(audience string) {
	s.mu.Lock()
	s.audience = audience
	s.mu.Unlock()
}

// Counts returns what the authorization server has done.
func (s *Server) Counts() Counts {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.counts
}

// RefreshTokens returns every refresh token value issued, oldest first.
func (s *Server) RefreshTokens() []string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return append([]string(nil), s.st.issued...)
}

// AccessTokens returns every bearer token the MCP server was sent.
func (s *Server) AccessTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// RefreshTokenActive reports whether value is an unrevoked refresh token.
func (s *Server) RefreshTokenActive(value string) bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	rt, ok := s.st.refreshes[value]
	return ok && !rt.revoked
}

// lookupOut is the tool's structured answer.
type lookupOut struct {
	Subject string `json:"subject"`
	Answer  string `json:"answer"`
}

type lookupIn struct {
	Key string `json:"key"`
}

func newMCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolName, Description: "Look a key up (read-only).", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			sub := ""
			if info := req.Extra.TokenInfo; info != nil {
				sub = info.UserID
			}
			return nil, lookupOut{Subject: sub, Answer: "value of " + in.Key}, nil
		})
	return srv
}
