package console_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// fleetConsole serves a console for the fleet test host h, its clock
// now.
func fleetConsole(t *testing.T, h *fleettest.Host, now func() time.Time) *console.Server {
	t.Helper()
	opened, err := host.Open(context.Background(), h.Home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	srv, err := console.New(console.Options{Host: opened, Poll: 20 * time.Millisecond, Operator: coordtest.Log{T: t}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, srv)
	return srv
}

// TestFleetPage: a host provisioned from a fleet (fleettest: a real
// registry, a published envelope, oa provision) links the Fleet page,
// which shows the envelope it applied (its sequence, digest and
// manifest), its expiry and the last status pushed, as the host's own
// signed records have them; past the expiry the page says the next sync
// refuses it. A host that waits for a person's approval shows the
// envelope and says no run left it bound. A host provisioned from no
// fleet links no Fleet page, and /fleet is refused, changing nothing.
func TestFleetPage(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	bound := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	waiting := f.NewHost("h02", fleettest.HostOptions{})
	pubs, err := fleet.Publish(ctx, f.LoadSpec("h01", "h02"), f.Key.Signer, fleet.Options{})
	if err != nil || len(pubs) != 2 {
		t.Fatalf("publish: %v %+v", err, pubs)
	}
	provision := func(h *fleettest.Host) (*fleet.Result, error) {
		return fleet.Provision(ctx, h.Home, f.Repository+":"+fleet.EnvelopeTag(h.ID), fleet.ProvisionOptions{
			Now: time.Now(), Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}, Version: "test"})
	}
	res, err := provision(bound)
	if err != nil || res.Status.State != fleet.Bound {
		t.Fatalf("provision h01: %v %+v", err, res)
	}
	if _, err := provision(waiting); err == nil {
		t.Fatal("h02 was bound without a person's approval")
	}
	var pub fleet.Published
	for _, p := range pubs {
		if p.Host == "h01" {
			pub = p
		}
	}

	srv := fleetConsole(t, bound, nil)
	c := newClient(t, srv)
	c.login(srv.URL())
	resp, body := c.get("/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<a href="/fleet" >Fleet</a>`) {
		t.Fatalf("the inbox of a fleet host links no Fleet page: %s\n%s", resp.Status, body)
	}
	rec, err := fleet.ReadHostRecord(ctx, mustOpen(t, bound.Home))
	if err != nil || rec == nil || rec.Bound == nil {
		t.Fatalf("the host record: %v %+v", err, rec)
	}
	resp, body = c.get("/fleet")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fleet page: %s\n%s", resp.Status, body)
	}
	for _, want := range []string{
		`aria-current="page">Fleet</a>`, "fleet <strong>clinics</strong>",
		`<dd id="envelope-seq">` + strconv.FormatInt(pub.Seq, 10) + `</dd>`,
		`<code id="envelope-digest">` + rec.EnvelopeDigest + `</code>`,
		`<code id="envelope-manifest">` + pub.Digest + `</code>`,
		`<time id="envelope-expires" datetime="` + rec.Bound.EnvelopeExpiresAt.UTC().Format(time.RFC3339) + `"`,
		`<time id="status-pushed" datetime="` + rec.Bound.StatusPushedAt.UTC().Format(time.RFC3339) + `"`,
		"<dt>Deployment</dt><dd>clinic</dd>", res.Status.PlanDigest,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet page lacks %s", want)
		}
	}
	if rec.EnvelopeSeq != pub.Seq || !strings.HasPrefix(rec.EnvelopeDigest, "sha256:") || rec.Bound.EnvelopeManifest != pub.Digest || rec.Bound.EnvelopeExpiresAt.IsZero() {
		t.Errorf("the host record: %+v, published %+v", rec, pub)
	}
	if strings.Contains(body, `id="envelope-expired"`) || strings.Contains(body, `id="status-stale"`) {
		t.Errorf("a fresh envelope is said expired or stale:\n%s", body)
	}
	// A console whose clock is past the envelope's expiry.
	later := rec.Bound.EnvelopeExpiresAt.Add(time.Second)
	srvLater := fleetConsole(t, bound, func() time.Time { return later })
	cLater := newClient(t, srvLater)
	cLater.login(srvLater.URL())
	if _, body = cLater.get("/fleet"); !strings.Contains(body, `id="envelope-expired"`) || !strings.Contains(body, `id="status-stale"`) {
		t.Errorf("past its expiry the envelope is not said expired:\n%s", body)
	}

	srv2 := fleetConsole(t, waiting, nil)
	c2 := newClient(t, srv2)
	c2.login(srv2.URL())
	resp, body = c2.get("/fleet")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="not-bound"`) || !strings.Contains(body, `<dd id="envelope-seq">`) {
		t.Fatalf("the waiting host's fleet page: %s\n%s", resp.Status, body)
	}

	plain := newFixture(t)
	c3 := newClient(t, plain.srv)
	c3.login(plain.srv.URL())
	before := plain.snapshot(t)
	if _, body := c3.get("/"); strings.Contains(body, `href="/fleet"`) {
		t.Errorf("a host of no fleet links the Fleet page")
	}
	resp, body = c3.get("/fleet")
	refused(t, "the fleet page of a host of no fleet", resp, body, http.StatusNotFound, blocking.ConsoleRequestInvalid)
	changedOnly(t, "after /fleet", before, plain.snapshot(t))
}

func mustOpen(t *testing.T, home string) *host.Host {
	t.Helper()
	h, err := host.Open(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestFleetPageInBrowser, in a real headless chromium: on a host
// provisioned from a fleet the Fleet link leads to the page, whose every
// link Tab alone reaches with focus shown, and which does not overflow
// at 200 % zoom.
func TestFleetPageInBrowser(t *testing.T) {
	ctx := browser(t)
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	if _, err := fleet.Publish(context.Background(), f.LoadSpec("h01"), f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Provision(context.Background(), h.Home, f.Repository+":"+fleet.EnvelopeTag(h.ID), fleet.ProvisionOptions{
		Now: time.Now(), Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	srv := fleetConsole(t, h, nil)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL()),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/fleet"]`)),
		chromedp.Click(chromedp.CSS(`a[href="/fleet"]`)),
		chromedp.WaitVisible(chromedp.ID("envelope-seq")),
		labelled(t, "fleet"),
		screenshot("fleet"),
		tabsReachAll(t, "fleet"),
		chromedp.EmulateViewport(640, 450, chromedp.EmulateScale(2)),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.ID("envelope-seq")),
		fitsWidth(t, "fleet"),
	); err != nil {
		t.Fatal(err)
	}
}
