package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
)

// TestConnectionsShowNeedsLogin: an OAuth connection with no stored
// login is shown as needing one, with the command that logs in; the
// sandbox, which takes no login, is not; adding the connection is the
// only change (nothing is sent to its server by showing the page).
func TestConnectionsShowNeedsLogin(t *testing.T) {
	f := newFixture(t)
	cfg := connector.Config{Remote: &remote.Config{URL: "https://mcp.example.test/mcp", OAuth: &remote.OAuth{ClientID: "oa-test"}}}
	if _, err := connection.Add(context.Background(), f.h, connection.AddOptions{Name: "remote", Connector: "records", Config: cfg}, f.Change()); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	resp, body := c.get("/connections")
	if resp.StatusCode != 200 {
		t.Fatalf("connections: %s", resp.Status)
	}
	row := func(name string) string {
		i := strings.Index(body, `<tr id="conn-`+name+`">`)
		if i < 0 {
			t.Fatalf("no row for %s:\n%s", name, body)
		}
		r := body[i:]
		return r[:strings.Index(r, "</tr>")]
	}
	if r := row("remote"); !strings.Contains(r, "needs login") || !strings.Contains(r, "oa connection login remote") {
		t.Errorf("the OAuth connection: %s", r)
	}
	if r := row("sandbox"); strings.Contains(r, "login") {
		t.Errorf("the sandbox: %s", r)
	}
}

// TestConnectionsShowTheLastError: a connection whose last verification
// failed shows that failure's code (a closed code, with the command that
// explains it); one verified since shows none.
func TestConnectionsShowTheLastError(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := connection.Add(ctx, f.h, connection.AddOptions{Name: "broken", Connector: "records", Config: connector.Config{Command: "/nonexistent/server"}}, f.Change()); err != nil {
		t.Fatal(err)
	}
	if _, err := connection.Verify(ctx, f.h, "broken", connector.Options{}, f.Change()); err == nil {
		t.Fatal("a server that cannot start was verified")
	}
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	_, body := c.get("/connections")
	i := strings.Index(body, `<tr id="conn-broken">`)
	if i < 0 {
		t.Fatalf("no row for the broken connection:\n%s", body)
	}
	r := body[i:]
	r = r[:strings.Index(r, "</tr>")]
	if !strings.Contains(r, `<code class="last-error">connector_start_failed</code>`) || !strings.Contains(r, "oa explain connector_start_failed") {
		t.Errorf("the broken connection's row: %s", r)
	}
	j := strings.Index(body, `<tr id="conn-sandbox">`)
	if j >= 0 && strings.Contains(body[j:j+strings.Index(body[j:], "</tr>")], "last-error") {
		t.Errorf("the sandbox shows a last error")
	}
}
