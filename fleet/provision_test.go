package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

func provision(t *testing.T, f *fleettest.Fleet, h *fleettest.Host) (*fleet.Result, error) {
	t.Helper()
	return fleet.Provision(context.Background(), h.Home, f.Repository+":"+fleet.EnvelopeTag(h.ID), fleet.ProvisionOptions{
		Now: time.Now(), Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}, Version: "test",
	})
}

func TestPublishProvisionRevoke(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	bound := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	waiting := f.NewHost("h02", fleettest.HostOptions{})
	other := f.NewHost("h03", fleettest.HostOptions{PreApprove: true, ConnectionRevisions: 2})
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01", "h02", "h03"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pubs {
		if !p.Changed || p.Seq < time.Now().Add(-time.Hour).Unix() {
			t.Fatalf("first publish %+v", p)
		}
	}
	before := f.Registry.Requests()
	again, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range again {
		if p.Changed || p.Digest != pubs[i].Digest {
			t.Fatalf("republish changed %+v", p)
		}
	}
	t.Logf("republishing 3 unchanged envelopes: %d requests", f.Registry.Requests()-before)

	r1, err := provision(t, f, bound)
	if err != nil || r1.Status.State != fleet.Bound || !r1.Bound || !r1.Admitted || len(r1.Copied) != 3 {
		t.Fatalf("h01: %v %+v", err, r1)
	}
	r2, err := provision(t, f, waiting)
	if !hosttest.HasCode(t, err, blocking.AwaitingApproval) || r2.Status.State != fleet.AwaitingApproval || r2.Bound {
		t.Fatalf("h02: %v %+v", err, r2)
	}
	r3, err := provision(t, f, other)
	if err != nil || r3.Status.State != fleet.Bound || r3.Status.PlanDigest == r1.Status.PlanDigest {
		t.Fatalf("h03: %v %+v (plan %s vs %s)", err, r3, r3.Status.PlanDigest, r1.Status.PlanDigest)
	}
	// A second run changes nothing and fetches no release blob.
	again1, err := provision(t, f, bound)
	if err != nil || again1.Bound || again1.Admitted || len(again1.Copied) != 0 || again1.Status.PlanDigest != r1.Status.PlanDigest {
		t.Fatalf("h01 again: %v %+v", err, again1)
	}

	statuses, err := fleet.ReadStatuses(ctx, spec, time.Now(), time.Hour, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fleet.State{"h01": fleet.Bound, "h02": fleet.AwaitingApproval, "h03": fleet.Bound}
	for _, s := range statuses {
		if s.Status == nil || s.Status.State != want[s.Host] || s.Signed != fleet.SignedSelf || s.Stale {
			t.Fatalf("status %+v", s)
		}
	}

	d, _ := oci.ParseDigest(f.Desc.Digest.String())
	if _, changed, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, d, "test", "Auditor", time.Now(), fleet.RevocationOptions{}); err != nil || !changed {
		t.Fatalf("revoke: %v %v", err, changed)
	}
	if _, changed, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, d, "test", "Auditor", time.Now(), fleet.RevocationOptions{}); err != nil || changed {
		t.Fatalf("revoke again: %v %v", err, changed)
	}
	for _, h := range []*fleettest.Host{bound, waiting, other} {
		r, err := provision(t, f, h)
		if !hosttest.HasCode(t, err, blocking.ReleaseRevoked) || r.Status.State != fleet.Revoked || len(r.Revoked) != 1 {
			t.Fatalf("%s after revocation: %v %+v", h.ID, err, r)
		}
	}
}

func TestProvisionRefusals(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	untrusting := f.NewHost("h02", fleettest.HostOptions{NoFleet: true})
	if _, err := provision(t, f, h); !hosttest.HasCode(t, err, blocking.FleetEnvelopeMissing) {
		t.Fatalf("no envelope: %v", err)
	}
	if _, err := provision(t, f, untrusting); !hosttest.HasCode(t, err, blocking.FleetNotTrusted) {
		t.Fatalf("no fleet section: %v", err)
	}
	// An envelope signed by another key.
	otherKey := fleettest.OtherKey(t)
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, otherKey.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := provision(t, f, h); !hosttest.HasCode(t, err, blocking.FleetEnvelopeUnverified) {
		t.Fatalf("foreign key: %v", err)
	}
	// The fleet key no longer matches what is there: refused, nothing written.
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); !hosttest.HasCode(t, err, blocking.FleetKeyMismatch) {
		t.Fatalf("publish over another key: %v", err)
	}
	// Another host's envelope.
	spec2, _ := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h09"}, "")))
	if _, err := fleet.Publish(ctx, spec2, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := fleet.Provision(ctx, h.Home, f.Repository+":"+fleet.EnvelopeTag("h09"), fleet.ProvisionOptions{Now: time.Now()})
	if !hosttest.HasCode(t, err, blocking.FleetEnvelopeWrongHost) {
		t.Fatalf("wrong host: %v", err)
	}
	// A ceiling pattern the package does not ask for.
	spec3, _ := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h07"}, `{capabilities: ["mail.*"], max_risk: "read_only"}`)))
	if _, err := fleet.Publish(ctx, spec3, f.Key.Signer, fleet.Options{}); !hosttest.HasCode(t, err, blocking.FleetCeilingOutsidePackage) {
		t.Fatalf("ceiling outside package: %v", err)
	}
}

func TestCeilingExceededWaits(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01"}, `{capabilities: ["*"], max_risk: "read_only"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := provision(t, f, h)
	if !hosttest.HasCode(t, err, blocking.FleetCeilingExceeded) || r.Status.State != fleet.AwaitingApproval {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestRegistryOutageMidProvision stops the registry after every few
// requests of a provisioning run and restarts it: the cut run fails as a
// fault or registry_unreachable (never another refusal, never a status
// for a half-done host), and the next run finishes.
func TestRegistryOutageMidProvision(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	spec := f.LoadSpec("h01")
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	// How many requests a whole run takes, once what this process
	// remembers of the release (oci.Remember) is warm, as it is for every
	// run below.
	var total int64
	for range 2 {
		probe := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
		f.Registry.ResetCounters()
		if _, err := provision(t, f, probe); err != nil {
			t.Fatal(err)
		}
		total = f.Registry.Requests()
	}
	t.Logf("one provisioning run: %d requests", total)
	for _, cut := range []int64{1, 2, 4, 6, 9, total / 2, total - 3, total - 1} {
		h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
		before := f.Registry.Requests()
		f.Registry.DownAfter(cut)
		res, err := provision(t, f, h)
		if used := f.Registry.Requests() - before; err == nil && used <= cut && cut > total-4 {
			// The run ended before the cut: a blob of the status it
			// pushes (its payload, to the second, or the host's public
			// key) was in the registry already, so the push took two
			// requests fewer than the probe's. No outage happened, so
			// the run must have bound the host.
			f.Registry.CancelDown()
			if res == nil || res.Status.State != fleet.Bound {
				t.Fatalf("cut after %d, not reached: %+v, want bound", cut, res)
			}
			continue
		}
		if !outage(err) || res != nil {
			t.Fatalf("cut after %d: got %v %+v, want a fault or registry_unreachable", cut, err, res)
		}
		f.Registry.Up(t)
		res, err = provision(t, f, h)
		if err != nil || res.Status.State != fleet.Bound {
			t.Fatalf("after the restart (cut %d): %v %+v", cut, err, res)
		}
	}
}

// outage reports whether err is what a registry outage gives: a fault
// (a dropped connection) or registry_unreachable, nothing else.
func outage(err error) bool {
	if err == nil {
		return false
	}
	for _, r := range blocking.Refusals(err) {
		if r.Code != blocking.RegistryUnreachable {
			return false
		}
	}
	return true
}
