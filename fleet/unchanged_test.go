package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestProvisionUnchanged: once a host is bound, a run with nothing
// changed costs the envelope's and revocation list's manifest HEADs and
// pushes nothing; a republished envelope, or a status older than
// StatusRefresh, makes the next run a full one again.
func TestProvisionUnchanged(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	now := time.Now()
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	first, err := provisionAt(t, f, h, now)
	if err != nil || first.Status.State != fleet.Bound || first.Unchanged {
		t.Fatalf("first run: %v %+v", err, first)
	}
	f.Registry.ResetCounters()
	again, err := provisionAt(t, f, h, now.Add(time.Minute))
	if err != nil || !again.Unchanged || again.Status.State != fleet.Bound || again.Status.PlanDigest != first.Status.PlanDigest || again.LocalRef != first.LocalRef {
		t.Fatalf("unchanged run: %v %+v", err, again)
	}
	if n := f.Registry.Requests(); n != 2 {
		t.Fatalf("an unchanged run made %d registry requests, want 2 (two manifest HEADs)", n)
	}
	// The status goes stale: a full run pushes a new one.
	if r, err := provisionAt(t, f, h, now.Add(fleet.DefaultStatusRefresh+time.Minute)); err != nil || r.Unchanged || r.Status.State != fleet.Bound {
		t.Fatalf("after the status refresh: %v %+v", err, r)
	}
	// A republished envelope (past half its lifetime) is a change.
	later := now.Add(fleet.DefaultExpiry/2 + time.Hour)
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{Now: later}); err != nil {
		t.Fatal(err)
	}
	r, err := provisionAt(t, f, h, later.Add(time.Minute))
	if err != nil || r.Unchanged || r.Status.EnvelopeSeq <= first.Status.EnvelopeSeq {
		t.Fatalf("after a republish: %v %+v", err, r)
	}
}
