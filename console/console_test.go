package console_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// decider is a person's SSH key in a test.
type decider struct {
	signer ssh.Signer
	line   string
}

func newDecider(t testing.TB) decider {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return decider{s, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))}
}

// sign signs a statement as ssh-keygen -Y sign -n oa-decision does.
func (d decider) sign(t testing.TB, statement string) string {
	t.Helper()
	sig, err := signing.SignSSH(d.signer, host.DecisionNamespace, []byte(statement))
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

// fixture is a host whose policy names ada (who may approve, reject,
// skip, teach and escalate on records.*) and bob (who may only escalate), the
// clinic deployment bound with every note approved by a person, a
// coordinator (the agent's side) and a console serving the host.
type fixture struct {
	*hosttest.Host
	h        *host.Host
	c        *coordinator.Coordinator
	ada, bob decider
	srv      *console.Server
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Append one note to a record."`, "description: \"Append one note to a record.\"\n\t\tapproval: \"required\"", 1))
}

// newFixtureWith is newFixture with the bundle edited by edit and the
// host's capability registry registry.
func newFixtureWith(t testing.TB, edit func(dir string), registry string) *fixture {
	t.Helper()
	return newFixtureConn(t, edit, registry, "sandbox", hosttest.Sandbox)
}

// newFixtureConn is newFixtureWith whose one connection is name,
// configured by cfg.
func newFixtureConn(t testing.TB, edit func(dir string), registry, name string, cfg connector.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{Host: hosttest.New(t, edit), ada: newDecider(t), bob: newDecider(t)}
	policy, err := os.OpenFile(filepath.Join(f.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(policy, "\npersons: {\nada: {name: \"Dr Ada\", ssh_key: %q, may: [{decide: [\"approve\", \"reject\", \"skip\", \"teach\", \"escalate\"], capabilities: [\"records.*\"]}]}\nbob: {ssh_key: %q, may: [{decide: [\"escalate\"]}]}\n}\n", f.ada.line, f.bob.line)
	policy.Close()
	f.h = f.Open()
	if _, _, err := admit.Admit(ctx, f.h, f.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: f.Now}); err != nil {
		t.Fatal(err)
	}
	f.WriteRegistry(registry)
	f.AddConnection(f.h, name, resolve.SandboxConnector, cfg)
	f.Bind(f.h, "claude-test")
	f.c = coordtest.Open(t, f.Home)
	f.srv, err = console.New(console.Options{Host: f.h, Poll: 20 * time.Millisecond, Operator: coordtest.Log{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, f.srv)
	return f
}

// serve serves srv until the test ends.
func serve(t testing.TB, srv *console.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// run runs the clinic workflow on record as the agent does.
func (f *fixture) run(t testing.TB, requestID, record string) *coordinator.Result {
	t.Helper()
	res, err := f.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs(record), RequestID: requestID, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// pause runs the workflow to its pause and returns the item's id.
func (f *fixture) pause(t testing.TB, requestID, record string) string {
	t.Helper()
	res := f.run(t, requestID, record)
	if res.Reason != contract.ReasonApprovalRequired || res.AttentionID == "" {
		t.Fatalf("not paused: %+v", res)
	}
	return res.AttentionID
}

func (f *fixture) item(t testing.TB, id string) *attention.Stored {
	t.Helper()
	it, err := coordinator.AttentionRecords(f.h).LoadOne(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// client is a browser as net/http: a cookie jar, no redirects followed.
type client struct {
	t    testing.TB
	c    *http.Client
	base string
	csrf string
}

func newClient(t testing.TB, srv *console.Server) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: srv.Origin(), c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request and returns the response with its body read.
func (c *client) do(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

func (c *client) get(path string) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req)
}

// post posts form to path (with the session's CSRF token unless form
// has its own).
func (c *client) post(path string, form url.Values) (*http.Response, string) {
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", c.csrf)
	}
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login spends the login token and reads the session's CSRF token.
func (c *client) login(loginURL string) {
	c.t.Helper()
	u, err := url.Parse(loginURL)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, _ := c.get(u.RequestURI())
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("login: %s", resp.Status)
	}
	resp, body := c.get("/history") // its filter form is always there
	m := csrfField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("history after login: %s", resp.Status)
	}
	if m == nil {
		c.t.Fatal("the history page carries no CSRF token")
	}
	c.csrf = m[1]
}

// refused holds that resp is the refusal code with status.
func refused(t testing.TB, what string, resp *http.Response, body string, status int, code blocking.Code) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("X-OA-Refusal") != string(code) || !strings.Contains(body, string(code)) {
		t.Errorf("%s: %s, refusal %q, want %d %s", what, resp.Status, resp.Header.Get("X-OA-Refusal"), status, code)
	}
}

var statementPre = regexp.MustCompile(`(?s)<pre id="statement"[^>]*>(.*?)</pre>`)
var atField = regexp.MustCompile(`name="at" value="([^"]+)"`)

// prepare asks for the statement of decision by person on item id and
// returns it (as signed: with its newline) and its time.
func (c *client) prepare(id, decision, person string) (statement, at string) {
	c.t.Helper()
	resp, body := c.post("/items/"+id+"/prepare", url.Values{"decision": {decision}, "person": {person}})
	m, a := statementPre.FindStringSubmatch(body), atField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || a == nil {
		c.t.Fatalf("prepare: %s\n%s", resp.Status, body)
	}
	return html.UnescapeString(m[1]), a[1]
}
