package console_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/testkit/servetest"
)

// decide makes decision on item id as person through the console: the
// statement prepared, signed with d's key, posted with text. It returns
// the response.
func (c *client) decide(d decider, id, decision, person, text string) (*http.Response, string) {
	c.t.Helper()
	statement, at := c.prepare(id, decision, person)
	form := url.Values{"decision": {decision}, "person": {person}, "at": {at}, "signature": {d.sign(c.t, statement)}}
	if text != "" {
		form.Set("text", text)
	}
	return c.post("/items/"+id+"/decide", form)
}

// decided is decide, held to be recorded: a redirect to the inbox naming
// the item.
func (c *client) decided(what string, d decider, id, decision, person, text string) {
	c.t.Helper()
	resp, body := c.decide(d, id, decision, person, text)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?decided="+id {
		c.t.Fatalf("%s: %s\n%s", what, resp.Status, body)
	}
}

// snapshot is what a decision may change on the host: every attention
// item (state, who decided, signed decisions, teach requests) and every
// run (status, outcome, reason).
func (f *fixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	items, err := coordinator.AttentionRecords(f.h).Load(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		teach := ""
		for _, tr := range it.Teach {
			teach += fmt.Sprintf("%+v;", tr)
		}
		out["item "+it.ID] = fmt.Sprintf("%s by %q, %d signed, teach %s", it.State, it.DecidedBy, len(it.Signed), teach)
	}
	runs, err := coordinator.History(ctx, f.h, coordinator.HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		out["run "+r.RunID] = r.Status + " " + r.Outcome + " " + r.Reason + " " + r.ReceiptDigest
	}
	return out
}

// changedOnly holds that between before and after exactly the entries
// named in want changed, and nothing else.
func changedOnly(t *testing.T, what string, before, after map[string]string, want ...string) {
	t.Helper()
	expected := map[string]bool{}
	for _, w := range want {
		expected[w] = true
	}
	for k, v := range after {
		if b, ok := before[k]; (!ok || b != v) != expected[k] {
			t.Errorf("%s: %s was %q, is %q (expected to change: %v)", what, k, before[k], v, expected[k])
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("%s: %s is gone", what, k)
		}
	}
}

// runOf is the run id of item id.
func (f *fixture) runOf(t *testing.T, id string) string {
	t.Helper()
	return f.item(t, id).RunID
}

// TestRejectEscalateTeachThroughConsole: with three runs paused, each
// decision made in the console changes its own item and run as the CLI's
// would, and nothing else: escalate leaves the run waiting, escalated;
// teach without text is refused and changes nothing, with text attaches
// the signed teach request and leaves the pause as it was; reject ends
// the run rejected with its receipt.
func TestRejectEscalateTeachThroughConsole(t *testing.T) {
	f := newFixture(t)
	rejectID := f.pause(t, "reject", "AB-1234")
	escalateID := f.pause(t, "escalate", "AB-1234")
	teachID := f.pause(t, "teach", "AB-1234")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())

	before := f.snapshot(t)
	c.decided("escalate", f.ada, escalateID, contract.DecisionEscalate, "ada", "")
	after := f.snapshot(t)
	changedOnly(t, "escalate", before, after, "item "+escalateID, "run "+f.runOf(t, escalateID))
	if it := f.item(t, escalateID); it.State != attention.Escalated || it.DecidedBy != "ada" || it.Channel != console.Channel {
		t.Errorf("escalated: %+v", it.Item)
	}
	if res := f.run(t, "escalate", "AB-1234"); res.Reason != contract.ReasonEscalated {
		t.Errorf("the escalated run: %+v", res)
	}

	before = f.snapshot(t)
	resp, body := c.decide(f.ada, teachID, contract.DecisionTeach, "ada", "")
	refused(t, "teach without text", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	changedOnly(t, "teach without text", before, f.snapshot(t))
	const lesson = "Ask for the record's ward before appending a note."
	c.decided("teach", f.ada, teachID, contract.DecisionTeach, "ada", lesson)
	changedOnly(t, "teach", before, f.snapshot(t), "item "+teachID)
	it := f.item(t, teachID)
	if it.State != attention.Open || len(it.Teach) != 1 || !strings.Contains(fmt.Sprintf("%+v", it.Teach[0]), lesson) {
		t.Errorf("taught: %+v, %d teach requests", it.Item, len(it.Teach))
	}
	if res := f.run(t, "teach", "AB-1234"); res.Reason != contract.ReasonApprovalRequired || res.AttentionID != teachID {
		t.Errorf("the taught run moved: %+v", res)
	}

	before = f.snapshot(t)
	c.decided("reject", f.ada, rejectID, contract.DecisionReject, "ada", "")
	changedOnly(t, "reject", before, f.snapshot(t), "item "+rejectID, "run "+f.runOf(t, rejectID))
	if it := f.item(t, rejectID); it.State != attention.Rejected || it.DecidedBy != "ada" {
		t.Errorf("rejected: %+v", it.Item)
	}
	res := f.run(t, "reject", "AB-1234")
	if res.Reason != contract.ReasonRejected || res.ReceiptDigest == "" {
		t.Errorf("the rejected run: %+v", res)
	}
}

// TestSkipThroughConsole: on a clinic whose read-back check may be
// skipped while the record is open, and whose reads need a person, ada
// approves the read in the console, the note is appended, and ada skips
// the read-back in the console: only that item and its run change, and
// the run ends skipped_not_confirmed, not sure if saved.
func TestSkipThroughConsole(t *testing.T) {
	f := newFixtureWith(t, servetest.SkippableCheck(t), servetest.ReadApprovalRegistry())
	other := f.pause(t, "other", "CD-5678")
	first := f.pause(t, "skip", "AB-1234")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	resp, body := c.post("/items/"+first+"/prepare", url.Values{"decision": {contract.DecisionSkip}, "person": {"ada"}})
	refused(t, "skip on a step not skippable", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	c.decided("approve the read", f.ada, first, contract.DecisionApprove, "ada", "")
	res := f.run(t, "skip", "AB-1234")
	if res.Reason != contract.ReasonApprovalAfterChange || res.AttentionID == "" || !f.item(t, res.AttentionID).Skippable {
		t.Fatalf("the read-back pause: %+v", res)
	}
	check := res.AttentionID

	before := f.snapshot(t)
	c.decided("skip", f.ada, check, contract.DecisionSkip, "ada", "")
	changedOnly(t, "skip", before, f.snapshot(t), "item "+check, "run "+res.RunID)
	if it := f.item(t, check); it.State != attention.Skipped || it.DecidedBy != "ada" {
		t.Errorf("skipped: %+v", it.Item)
	}
	if it := f.item(t, other); it.State != attention.Open {
		t.Errorf("the other item: %+v", it.Item)
	}
	done := f.run(t, "skip", "AB-1234")
	if done.Reason != contract.ReasonSkippedNotConfirmed || done.Outcome != contract.OutcomeNotSureIfSaved {
		t.Errorf("after the skip: %+v", done)
	}
}

// selfSigned writes a self-signed ECDSA certificate for names (DNS names
// and IP addresses) and its key as PEM files under dir.
func selfSigned(t *testing.T, dir string, names ...string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "console.crt"), filepath.Join(dir, "console.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServingWithTLS: with a real self-signed certificate the console
// listens beyond loopback (every interface, reached by its --name), the
// URL it prints is https, a client that trusts the certificate logs in
// and gets a Secure session cookie, HSTS and the inbox; plain HTTP on
// the same port is served no page; a client that does not trust the
// certificate gets no connection.
func TestServingWithTLS(t *testing.T) {
	f := newFixture(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir(), "localhost", "127.0.0.1")
	srv, err := console.New(console.Options{Host: f.h, Listen: "0.0.0.0:0", TLSCert: certFile, TLSKey: keyFile, Names: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, srv)
	if !strings.HasPrefix(srv.URL(), "https://localhost:") {
		t.Fatalf("URL = %s", srv.URL())
	}
	jar, _ := cookiejar.New(nil)
	c := &client{t: t, base: srv.Origin(), c: &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, _ := c.get(mustRequestURI(t, srv.URL()))
	if sc := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(sc, "Secure") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Fatalf("login over TLS: %s, Set-Cookie %q", resp.Status, sc)
	}
	resp, body := c.get("/")
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || !strings.Contains(resp.Header.Get("Strict-Transport-Security"), "max-age=") || !strings.Contains(body, "Inbox") {
		t.Fatalf("the inbox over TLS: %s, HSTS %q", resp.Status, resp.Header.Get("Strict-Transport-Security"))
	}

	port := srv.Addr().(*net.TCPAddr).Port
	plain, err := http.Get(fmt.Sprintf("http://localhost:%d/", port))
	if err == nil {
		b := make([]byte, 512)
		n, _ := plain.Body.Read(b)
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest || strings.Contains(string(b[:n]), "oa console") {
			t.Errorf("plain HTTP to the TLS port: %s %q", plain.Status, b[:n])
		}
	}
	untrusting := &http.Client{Transport: &http.Transport{}}
	if resp, err := untrusting.Get(srv.Origin() + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("a client that does not trust the certificate was served: %s", resp.Status)
	}
}
