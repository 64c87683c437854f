package connector_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/internal/tokenstore"
	"github.com/oa-dev/oa/testkit/oauthtest"
)

// oauthConn is a connection to srv that logs in as the public client, its
// tokens in a store of its own.
func oauthConn(t *testing.T, srv *oauthtest.Server) (connector.Config, connector.Options) {
	t.Helper()
	home := t.TempDir()
	return remoteConfig(remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{ClientID: oauthtest.PublicClient}}),
		connector.Options{Tokens: tokenstore.For(home, "crm"), Timeout: 30 * time.Second}
}

// follow is a person's browser: it opens the authorization URL and follows
// the redirects (the test server signs the test user in) to oa's loopback
// redirect, failing the test unless that answered 200.
func follow(t *testing.T) func(string) {
	return func(u string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("following the authorization URL: %v", err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the redirect answered %d: %s", resp.StatusCode, body)
		}
	}
}

func login(t *testing.T, cfg connector.Config, opts connector.Options) {
	t.Helper()
	if err := connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: follow(t), Wait: time.Minute}); err != nil {
		t.Fatalf("login: %v", err)
	}
}

// TestOAuthLoginThenCall: before a login a call is refused
// remote_login_required with nothing sent; the login runs the
// authorization-code flow against the real authorization server (PKCE,
// state, resource indicator: the server refuses a request without one);
// then the server lists and calls with the stored token, which the MCP
// server's middleware verified by introspection (the tool sees the test
// user), and no refresh was needed.
func TestOAuthLoginThenCall(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg, opts := oauthConn(t, srv)
	_, err := connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.RemoteLoginRequired)
	if len(srv.AccessTokens()) != 0 {
		t.Fatal("a request was sent without a login")
	}
	login(t, cfg, opts)
	if c := srv.Counts(); c.Logins != 1 || c.Refreshes != 0 {
		t.Fatalf("counts after login: %+v", c)
	}
	d, err := connector.Describe(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Inventory.Tools) != 1 || d.Inventory.Tools[0].Name != oauthtest.ToolName {
		t.Fatalf("inventory: %+v", d.Inventory.Tools)
	}
	s, err := connector.Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Call(context.Background(), oauthtest.ToolName, map[string]any{"key": "k1"})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Subject string }
	if err := json.Unmarshal(res.Structured, &out); err != nil || out.Subject != oauthtest.TestUser {
		t.Fatalf("the tool saw subject %q (%v)", out.Subject, err)
	}
	if c := srv.Counts(); c.Refreshes != 0 || c.Logins != 1 {
		t.Fatalf("a valid token was refreshed or a second login ran: %+v", c)
	}
}

// TestOAuthRefreshRotates: an access token the server says ends within
// seconds is refreshed before each request; the server rotates refresh
// tokens (each one used is then dead), and every later refresh succeeds
// only because the rotated one was stored.
func TestOAuthRefreshRotates(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{ExpiresIn: 5 * time.Second})
	cfg, opts := oauthConn(t, srv)
	login(t, cfg, opts)
	for i := 1; i <= 2; i++ {
		if _, err := connector.Describe(context.Background(), cfg, opts); err != nil {
			t.Fatalf("describe %d: %v", i, err)
		}
		rts := srv.RefreshTokens()
		if c := srv.Counts(); c.Refreshes == 0 || c.Refreshes != len(rts)-1 {
			t.Fatalf("after describe %d: %+v, %d refresh tokens", i, c, len(rts))
		}
		for j, rt := range rts {
			if srv.RefreshTokenActive(rt) != (j == len(rts)-1) {
				t.Fatalf("refresh token %d of %d active: %v", j, len(rts), srv.RefreshTokenActive(rt))
			}
		}
	}
}

// TestOAuthExpiredOnServer: an access token the server has ended (the
// client still thinks it valid) is answered 401: oauth_token_rejected, no
// retry; oa drops it, so the next request refreshes and succeeds.
func TestOAuthExpiredOnServer(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg, opts := oauthConn(t, srv)
	login(t, cfg, opts)
	srv.Expire()
	sent := len(srv.AccessTokens())
	_, err := connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthTokenRejected)
	if n := len(srv.AccessTokens()) - sent; n != 1 {
		t.Fatalf("the rejected token was sent %d times, want once (no retry)", n)
	}
	if _, err := connector.Describe(context.Background(), cfg, opts); err != nil {
		t.Fatalf("after the refresh: %v", err)
	}
	if c := srv.Counts(); c.Refreshes != 1 {
		t.Fatalf("refreshes: %+v", c)
	}
}

// TestOAuthRevoked: revoked tokens are oauth_token_rejected on the next
// request, then remote_login_required (the refresh token is revoked too);
// nothing loops; a new login works again.
func TestOAuthRevoked(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg, opts := oauthConn(t, srv)
	login(t, cfg, opts)
	srv.Revoke()
	_, err := connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthTokenRejected)
	sent := len(srv.AccessTokens())
	_, err = connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.RemoteLoginRequired)
	if len(srv.AccessTokens()) != sent {
		t.Fatal("a request was sent although no token could be had")
	}
	login(t, cfg, opts)
	if _, err := connector.Describe(context.Background(), cfg, opts); err != nil {
		t.Fatal(err)
	}
}

// TestOAuthWrongAudience: a login whose token the server does not accept
// (it wants another audience) stores nothing; a token issued for this URL,
// presented once the server accepts only another resource, is refused
// oauth_token_rejected; and a stored login is never sent to another URL.
func TestOAuthWrongAudience(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg, opts := oauthConn(t, srv)
	srv.SetAudience("http://127.0.0.1:1/other")
	err := connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: follow(t), Wait: time.Minute})
	wantCode(t, err, blocking.OAuthLoginFailed)
	if st := connector.StoredLogin(cfg, opts.Tokens); st.Stored {
		t.Fatal("a login the server refused was stored")
	}
	srv.SetAudience(srv.MCPURL)
	login(t, cfg, opts)
	if st := connector.StoredLogin(cfg, opts.Tokens); !st.Stored || !st.Refreshable || st.Problem != "" {
		t.Fatalf("stored login: %+v", st)
	}
	srv.SetAudience("http://127.0.0.1:1/other")
	_, err = connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthTokenRejected)

	srv.SetAudience(srv.MCPURL)
	other := *cfg.Remote
	other.URL = srv.MCPURL + "/"
	sent := len(srv.AccessTokens())
	_, err = connector.Describe(context.Background(), connector.Config{Remote: &other}, opts)
	wantCode(t, err, blocking.RemoteLoginRequired)
	if len(srv.AccessTokens()) != sent {
		t.Fatal("a login was sent to another URL")
	}
}

// TestOAuthClientCredentials: a machine connection needs no login: oa
// discovers the token endpoint, gets a token with the client's secret
// (read from its 0600 file) and the resource indicator, and keeps it for
// the next session; a wrong secret is oauth_client_refused with nothing
// sent to the MCP server.
func TestOAuthClientCredentials(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(oauthtest.MachineSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := remoteConfig(remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{ClientID: oauthtest.MachineClient, ClientSecretFile: secret}})
	opts := connector.Options{Tokens: tokenstore.For(dir, "machine"), Timeout: 30 * time.Second}
	for range 2 {
		if _, err := connector.Describe(context.Background(), cfg, opts); err != nil {
			t.Fatal(err)
		}
	}
	if c := srv.Counts(); c.ClientCredentials != 1 || c.Logins != 0 {
		t.Fatalf("counts: %+v (want one token for two sessions)", c)
	}
	if err := connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: follow(t)}); !blocking.Has(err, blocking.OAuthNotConfigured) {
		t.Fatalf("login of a client-credentials connection: %v", err)
	}

	if err := os.WriteFile(secret, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := connector.Options{Tokens: tokenstore.For(dir, "machine2"), Timeout: 30 * time.Second}
	sent := len(srv.AccessTokens())
	_, err := connector.Describe(context.Background(), cfg, fresh)
	wantCode(t, err, blocking.OAuthClientRefused)
	if len(srv.AccessTokens()) != sent {
		t.Fatal("a request reached the MCP server without a token")
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the refusal quotes the secret: %v", err)
	}
}

// TestOAuthTokenStoreTampered: a token file edited, or copied to another
// connection's name, does not open: oauth_token_store_invalid, nothing
// sent. A token file readable by others is refused the same way.
func TestOAuthTokenStoreTampered(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	home := t.TempDir()
	cfg := remoteConfig(remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{ClientID: oauthtest.PublicClient}})
	opts := connector.Options{Tokens: tokenstore.For(home, "crm"), Timeout: 30 * time.Second}
	login(t, cfg, opts)
	file := filepath.Join(home, tokenstore.Folder, "crm.token")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, tokenstore.Folder, "copy.token"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	sent := len(srv.AccessTokens())
	_, err = connector.Describe(context.Background(), cfg, connector.Options{Tokens: tokenstore.For(home, "copy"), Timeout: 30 * time.Second})
	wantCode(t, err, blocking.OAuthTokenStoreInvalid)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthTokenStoreInvalid)
	b[len(b)-1] ^= 1
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.OAuthTokenStoreInvalid)
	if len(srv.AccessTokens()) != sent {
		t.Fatal("a token from an unusable store was sent")
	}
}

// TestOAuthLoginRefusals: a person who declines is oauth_login_denied, one
// who never answers oauth_login_timeout, and a stray request to the
// loopback redirect (wrong state) is ignored rather than taken; with no
// client id where the server registers none, the login is refused before
// any URL is shown.
func TestOAuthLoginRefusals(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	cfg, opts := oauthConn(t, srv)
	redirectOf := func(authURL string) (string, string) {
		i := strings.Index(authURL, "redirect_uri=")
		ru := authURL[i+len("redirect_uri="):]
		if j := strings.IndexByte(ru, '&'); j >= 0 {
			ru = ru[:j]
		}
		ru = strings.NewReplacer("%3A", ":", "%2F", "/").Replace(ru)
		k := strings.Index(authURL, "state=")
		st := authURL[k+len("state="):]
		if j := strings.IndexByte(st, '&'); j >= 0 {
			st = st[:j]
		}
		return ru, st
	}
	deny := func(u string) {
		ru, st := redirectOf(u)
		resp, err := http.Get(ru + "?state=forged&code=x")
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged answer was not refused: %v %v", resp, err)
		}
		resp, err = http.Get(ru + "?state=" + st + "&error=access_denied")
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	err := connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: deny, Wait: time.Minute})
	wantCode(t, err, blocking.OAuthLoginDenied)
	err = connector.Login(context.Background(), cfg, remote.LoginOptions{Tokens: opts.Tokens, Show: func(string) {}, Wait: 100 * time.Millisecond})
	wantCode(t, err, blocking.OAuthLoginTimeout)
	_, err = connector.Describe(context.Background(), cfg, opts)
	wantCode(t, err, blocking.RemoteLoginRequired)

	// No client id, and a server that offers neither dynamic registration
	// nor Client ID Metadata Documents: nothing to log in as.
	noID := remoteConfig(remote.Config{URL: srv.MCPURL, OAuth: &remote.OAuth{}})
	err = connector.Login(context.Background(), noID, remote.LoginOptions{Tokens: opts.Tokens, Show: follow(t), Wait: time.Minute})
	wantCode(t, err, blocking.OAuthDiscoveryFailed)
}
