package main

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/oauthtest"
)

// browser is the person's side of oa connection login: it watches what
// oa prints on stderr and opens the authorization URL (following the
// redirects to oa's loopback redirect, as a browser would).
type browser struct {
	t    *testing.T
	mu   sync.Mutex
	text strings.Builder
}

var authURL = regexp.MustCompile(`https?://\S+/authorize\?\S+`)

func (b *browser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before := authURL.FindString(b.text.String())
	b.text.Write(p)
	if u := authURL.FindString(b.text.String()); u != "" && before == "" {
		resp, err := http.Get(u)
		if err != nil {
			b.t.Errorf("opening the authorization URL: %v", err)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	return len(p), nil
}

// TestConnectionOAuthCLI: a remote server behind OAuth end to end through
// the CLI: add with --oauth (the method shown and planned), verify before a
// login is refused remote_login_required, login follows the printed URL,
// verify records the inventory, the plan names the grant, logout removes
// the login and verify is refused again. Every token the authorization
// server issued and the MCP server saw is planted nowhere: not in any
// output (text or --json, the plan included), not in any file under
// OA_HOME (the database included; the token file is sealed).
func TestConnectionOAuthCLI(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Server: sandbox.NewServer("")})
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	t.Setenv("OA_HOME", h.Home)
	var outputs strings.Builder
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, args...)
		outputs.WriteString(out + errOut)
		if code != 0 {
			t.Fatalf("oa %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	refused := func(code string, args ...string) {
		t.Helper()
		out, errOut, status := runCLI(t, args...)
		outputs.WriteString(out + errOut)
		what := "oa " + strings.Join(args, " ")
		wantExit(t, what, status, 2, out, errOut)
		wantHas(t, what, out+errOut, code)
	}
	bearer := filepath.Join(t.TempDir(), "bearer")
	if err := os.WriteFile(bearer, []byte("b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("connection_invalid", "connection", "add-remote", "both", srv.MCPURL, "--connector", resolve.SandboxConnector, "--oauth", "--bearer-secret-file", bearer, "--as", "Dr Ada")
	refused("connection_invalid", "connection", "add-remote", "cc", srv.MCPURL, "--connector", resolve.SandboxConnector, "--oauth", "--oauth-client-secret-file", bearer, "--as", "Dr Ada")
	if _, _, code := runCLI(t, "connection", "add-remote", "x", srv.MCPURL, "--connector", resolve.SandboxConnector, "--oauth-client-id", "a", "--as", "Dr Ada"); code != 2 {
		t.Fatalf("--oauth-client-id without --oauth: exit %d", code)
	}

	ok("connection", "add-remote", "records", srv.MCPURL, "--connector", resolve.SandboxConnector, "--oauth", "--oauth-client-id", oauthtest.PublicClient, "--as", "Dr Ada")
	refused("remote_login_required", "connection", "verify", "records", "--as", "Dr Ada")
	wantHas(t, "show does not name the OAuth method and the missing login", ok("connection", "show", "records"),
		"auth       oauth (authorization_code, client "+oauthtest.PublicClient+")", "login      none: run oa connection login records --as NAME")

	var out strings.Builder
	b := &browser{t: t}
	if code := run([]string{"connection", "login", "records", "--as", "Dr Ada", "--timeout", "1m"}, &out, b); code != 0 {
		t.Fatalf("login: exit %d\n%s%s", code, out.String(), b.text.String())
	}
	outputs.WriteString(out.String() + b.text.String())
	wantHas(t, "login printed", out.String(), "connection records: login stored")
	wantHas(t, "login printed", b.text.String(), "/authorize?")

	ok("connection", "verify", "records", "--as", "Dr Ada")
	if show := ok("connection", "show", "records"); !strings.Contains(show, "login      stored, refreshable, access token until ") {
		t.Fatalf("show does not say the login is stored:\n%s", show)
	}
	ok("connection", "show", "records", "--json")
	ok("connection", "list", "--json")
	plan := ok("resolve", h.Ref, "--deployment", "clinic")
	if !strings.Contains(plan, "connection records is remote: "+srv.MCPURL+" (Streamable HTTP, auth oauth authorization_code)") {
		t.Fatalf("the plan does not name the OAuth grant:\n%s", plan)
	}
	ok("resolve", h.Ref, "--deployment", "clinic", "--json")
	ok("explain", "oauth_token_rejected")

	if logout := ok("connection", "logout", "records", "--as", "Dr Ada"); !strings.Contains(logout, "login removed (refresh token revoked at the authorization server)") {
		t.Fatalf("logout printed %q", logout)
	}
	rts := srv.RefreshTokens()
	if srv.RefreshTokenActive(rts[len(rts)-1]) {
		t.Fatal("logout left the refresh token active at the authorization server")
	}
	if logout := ok("connection", "logout", "records", "--as", "Dr Ada"); !strings.Contains(logout, "login none stored") {
		t.Fatalf("second logout printed %q", logout)
	}
	refused("remote_login_required", "connection", "verify", "records", "--as", "Dr Ada")
	ok("connection", "add-remote", "plain", srv.MCPURL, "--connector", resolve.SandboxConnector, "--as", "Dr Ada")
	refused("oauth_not_configured", "connection", "login", "plain", "--as", "Dr Ada")

	tokens := append(srv.RefreshTokens(), srv.AccessTokens()...)
	if len(srv.RefreshTokens()) == 0 {
		t.Fatal("no refresh token was issued")
	}
	if len(srv.AccessTokens()) == 0 {
		t.Fatal("no access token was issued and used")
	}
	for _, tok := range tokens {
		if strings.Contains(outputs.String(), tok) {
			t.Fatalf("an output holds a token")
		}
	}
	err := filepath.WalkDir(h.Home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		for _, tok := range tokens {
			if strings.Contains(string(data), tok) {
				t.Errorf("%s holds a token", path)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
