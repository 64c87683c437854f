package console_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestRefusalsChangeNothing: no token, a wrong or used token, a wrong
// Host header, a form without the session's CSRF token, a bad field, a
// body over the bound, an unknown person, a signature that is not the
// person's and a decision by a person without the right are each refused
// with their code, and the item stays open, its run paused. Then ada's
// own signature counts, over plain HTTP, and the run ends done.
func TestRefusalsChangeNothing(t *testing.T) {
	f := newFixture(t)
	id := f.pause(t, "http", "AB-1234")
	c := newClient(t, f.srv)

	resp, body := c.get("/")
	refused(t, "no session", resp, body, http.StatusForbidden, blocking.ConsoleLoginRefused)
	resp, body = c.get("/login?token=wrong")
	refused(t, "wrong token", resp, body, http.StatusForbidden, blocking.ConsoleLoginRefused)

	u, _ := url.Parse(f.srv.URL())
	req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
	req.Host = "rebound.example:" + u.Port()
	resp, body = c.do(req)
	refused(t, "wrong Host", resp, body, http.StatusMisdirectedRequest, blocking.ConsoleHostRefused)

	c.login(f.srv.URL()) // the refusals before did not spend the token
	resp, _ = c.get("/")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	other := newClient(t, f.srv)
	resp, body = other.get(u.RequestURI())
	refused(t, "a used token", resp, body, http.StatusForbidden, blocking.ConsoleLoginRefused)

	cookies := c.c.Jar.Cookies(u)
	if len(cookies) != 1 || cookies[0].Name != console.CookieName {
		t.Fatalf("cookies: %+v", cookies)
	}
	// The jar does not keep the flags; read them from a fresh login.
	f2 := newFixtureServer(t, f)
	resp, _ = newClient(t, f2).get(mustRequestURI(t, f2.URL()))
	if sc := resp.Header.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Errorf("Set-Cookie = %q", sc)
	}

	resp, body = c.post("/items/"+id+"/prepare", url.Values{"csrf": {""}, "decision": {"approve"}, "person": {"ada"}})
	refused(t, "no CSRF token", resp, body, http.StatusForbidden, blocking.ConsoleCSRFRefused)
	resp, body = c.post("/items/"+id+"/prepare", url.Values{"csrf": {"another-session"}, "decision": {"approve"}, "person": {"ada"}})
	refused(t, "another CSRF token", resp, body, http.StatusForbidden, blocking.ConsoleCSRFRefused)
	resp, body = c.post("/items/"+id+"/prepare", url.Values{"decision": {"frobnicate"}, "person": {"ada"}})
	refused(t, "no such decision", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	resp, body = c.post("/items/"+id+"/prepare", url.Values{"decision": {"skip"}, "person": {"ada"}})
	refused(t, "skip on a step not skippable", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	resp, body = c.post("/items/"+id+"/prepare", url.Values{"decision": {"approve"}, "person": {"mallory"}})
	refused(t, "unknown person", resp, body, http.StatusUnprocessableEntity, blocking.DecisionPersonUnknown)
	resp, body = c.post("/items/att_none/prepare", url.Values{"decision": {"approve"}, "person": {"ada"}})
	refused(t, "unknown item", resp, body, http.StatusUnprocessableEntity, blocking.AttentionUnknown)
	resp, body = c.post("/items/"+id+"/prepare", url.Values{"decision": {"approve"}, "person": {strings.Repeat("a", console.MaxBody)}})
	refused(t, "a body over the bound", resp, body, http.StatusBadRequest, blocking.ConsoleRequestInvalid)

	decide := func(person, statement, at, signature string) (*http.Response, string) {
		return c.post("/items/"+id+"/decide", url.Values{"decision": {"approve"}, "person": {person}, "at": {at}, "signature": {signature}})
	}
	statement, at := c.prepare(id, contract.DecisionApprove, "bob")
	resp, body = decide("bob", statement, at, f.bob.sign(t, statement))
	refused(t, "a person without the right", resp, body, http.StatusUnprocessableEntity, blocking.DecisionNotPermitted)
	statement, at = c.prepare(id, contract.DecisionApprove, "ada")
	resp, body = decide("ada", statement, at, f.bob.sign(t, statement))
	refused(t, "another's key", resp, body, http.StatusUnprocessableEntity, blocking.DecisionSignatureInvalid)
	resp, body = decide("ada", statement, at, "")
	refused(t, "no signature", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	resp, body = decide("ada", statement, "yesterday", f.ada.sign(t, statement))
	refused(t, "no time", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	resp, body = c.post("/items/"+id+"/decide", url.Values{"decision": {"reject"}, "person": {"ada"}, "at": {at}, "signature": {f.ada.sign(t, statement)}})
	refused(t, "a signature of another decision", resp, body, http.StatusUnprocessableEntity, blocking.DecisionSignatureInvalid)

	if it := f.item(t, id); it.State != attention.Open || len(it.Signed) != 0 {
		t.Fatalf("after the refusals: %+v", it.Item)
	}
	if again := f.run(t, "http", "AB-1234"); again.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("the run moved: %+v", again)
	}

	// The statement downloaded is the statement shown, byte for byte.
	resp, body = c.post("/items/"+id+"/statement", url.Values{"decision": {"approve"}, "person": {"ada"}, "at": {at}})
	if resp.StatusCode != http.StatusOK || body != statement || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download: %s %q, want %q", resp.Status, body, statement)
	}

	// Ada's signature, uploaded as a file, counts.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for k, v := range map[string]string{"csrf": c.csrf, "decision": "approve", "person": "ada", "at": at} {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("signature_file", "statement.sig")
	_, _ = fw.Write([]byte(f.ada.sign(t, statement)))
	mw.Close()
	req, _ = http.NewRequest(http.MethodPost, c.base+"/items/"+id+"/decide", &form)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, body = c.do(req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?decided="+id {
		t.Fatalf("ada's approval: %s\n%s", resp.Status, body)
	}
	it := f.item(t, id)
	if it.State != attention.Approved || it.DecidedBy != "ada" || it.Channel != console.Channel || len(it.Signed) != 1 {
		t.Fatalf("approved: %+v", it.Item)
	}
	if _, err := f.h.Policy.VerifyDecision(&it.Signed[0], "clinic-triage"); err != nil {
		t.Fatalf("the kept decision does not verify: %v", err)
	}
	if done := f.run(t, "http", "AB-1234"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed: %+v", done)
	}
	resp, body = c.post("/history.csv", url.Values{"person": {"ada"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "approve by ada") || !strings.Contains(body, ",done,") {
		t.Fatalf("CSV: %s\n%s", resp.Status, body)
	}
	resp, body = c.post("/history", url.Values{"since": {"last week"}})
	refused(t, "a bad time", resp, body, http.StatusBadRequest, blocking.ConsoleRequestInvalid)
}

// newFixtureServer is another console on f's host.
func newFixtureServer(t *testing.T, f *fixture) *console.Server {
	srv, err := console.New(console.Options{Host: f.h})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, srv)
	return srv
}

func mustRequestURI(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

// TestListeningBeyondLoopbackNeedsTLS: an address other machines reach
// is refused without TLS; TLS files that are not a pair are refused too.
func TestListeningBeyondLoopbackNeedsTLS(t *testing.T) {
	h := hosttest.New(t, nil).Open()
	for _, listen := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if _, err := console.New(console.Options{Host: h, Listen: listen}); !blocking.Has(err, blocking.ConsoleListenUnsafe) {
			t.Errorf("%s: %v", listen, err)
		}
	}
	if _, err := console.New(console.Options{Host: h, Listen: "0.0.0.0:0", TLSCert: "cert.pem"}); !blocking.Has(err, blocking.ConsoleTLSInvalid) {
		t.Errorf("cert alone: %v", err)
	}
	if _, err := console.New(console.Options{Host: h, Listen: "0.0.0.0:0", TLSCert: "missing.pem", TLSKey: "missing.key"}); !blocking.Has(err, blocking.ConsoleTLSInvalid) {
		t.Errorf("missing files: %v", err)
	}
	srv, err := console.New(console.Options{Host: h, Listen: "localhost:0"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
}
