package remote

import (
	"regexp"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// urlRefusal is every Detail Normalize may give for a URL: fixed
// copy, nothing from the input.
var urlRefusal = regexp.MustCompile(`^(give the server's MCP endpoint as an absolute https:// URL|the URL must be absolute and start with https:// \(or http:// for a loopback address\)|the URL holds a user name or password; .*|the URL has a #fragment, which HTTP never sends; remove it|--plain-http is for an http:// URL; an https:// URL is always encrypted|http:// is unencrypted: use https://, or pass --plain-http to accept plain HTTP to this host \(shown in the plan\))$`)

// FuzzNormalizeRemote: any URL either normalizes to an absolute http(s)
// URL that normalizes to itself (plain http only to loopback unless
// allowed), or is refused with connector_config_invalid whose detail never
// holds the input.
func FuzzNormalizeRemote(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "HTTP://127.0.0.1:80", "http://[::1]:3001/x?y=1", "https://u:p@h/", "https://h/#f", "mcp.example.com", "http://10.0.0.1/", "https://h:443", "ftp://h/", "https://%zz/", "http://localhost"} {
		f.Add(s, false)
	}
	f.Add("http://mcp.internal:8080/mcp", true)
	f.Fuzz(func(t *testing.T, raw string, plain bool) {
		r, err := Normalize(Config{URL: raw, PlainHTTP: plain})
		if err != nil {
			for _, e := range blocking.Refusals(err) {
				if e.Code != blocking.ConnectorConfigInvalid || !urlRefusal.MatchString(e.Detail) {
					t.Fatalf("unexpected refusal: %v", err)
				}
			}
			return
		}
		if !strings.HasPrefix(r.URL, "https://") && !strings.HasPrefix(r.URL, "http://") {
			t.Fatalf("normalized to %q", r.URL)
		}
		again, err := Normalize(Config{URL: r.URL, PlainHTTP: plain})
		if err != nil || again.URL != r.URL {
			t.Fatalf("not a fixed point: %q -> %q (%v)", r.URL, again.URL, err)
		}
	})
}

// FuzzNormalizeOAuth: any OAuth settings either normalize (method oauth, a
// grant derived, every scope an RFC 6749 scope-token, a fixed point) or
// are refused connector_config_invalid at an oauth field, never quoting
// the client id or a scope.
func FuzzNormalizeOAuth(f *testing.F) {
	f.Add("oa-cli", "mcp:read offline_access", 0, false)
	f.Add("https://oa.example/client.json", "", 8123, false)
	f.Add("machine", "a\"b", 0, true)
	f.Add("", "", -1, true)
	f.Add("bad id\x00", "ok", 70000, false)
	f.Fuzz(func(t *testing.T, clientID, scopes string, port int, secret bool) {
		o := &OAuth{ClientID: clientID, Scopes: strings.Split(scopes, " "), RedirectPort: port}
		if scopes == "" {
			o.Scopes = nil
		}
		if secret {
			o.ClientSecretFile = "/run/secret"
		}
		r, err := Normalize(Config{URL: "https://mcp.example.com/mcp", OAuth: o})
		if err != nil {
			for _, e := range blocking.Refusals(err) {
				if e.Code != blocking.ConnectorConfigInvalid || !strings.HasPrefix(e.Path, "remote.oauth.") {
					t.Fatalf("unexpected refusal: %v", err)
				}
				if (len(clientID) > 3 && strings.Contains(e.Detail, clientID)) || (len(scopes) > 3 && strings.Contains(e.Detail, scopes)) {
					t.Fatalf("the refusal quotes the input: %v", e.Detail)
				}
			}
			return
		}
		if r.Auth != AuthOAuth || (r.OAuth.Grant != GrantAuthorizationCode && r.OAuth.Grant != GrantClientCredentials) {
			t.Fatalf("normalized to %+v %+v", r, r.OAuth)
		}
		for _, s := range r.OAuth.Scopes {
			if !validScope(s) {
				t.Fatalf("scope %q kept", s)
			}
		}
		again, err := Normalize(r)
		if err != nil || again.OAuth.Grant != r.OAuth.Grant {
			t.Fatalf("not a fixed point: %v", err)
		}
	})
}
