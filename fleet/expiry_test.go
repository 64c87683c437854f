package fleet_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// provisionAt provisions h as if the time were now.
func provisionAt(t *testing.T, f *fleettest.Fleet, h *fleettest.Host, now time.Time) (*fleet.Result, error) {
	t.Helper()
	return fleet.Provision(context.Background(), h.Home, f.Repository+":"+fleet.EnvelopeTag(h.ID), fleet.ProvisionOptions{
		Now: now, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}, Version: "test",
	})
}

// TestEnvelopeExpiredFreeze: a registry that keeps serving a host its
// old, validly signed envelope (a freeze) is noticed once the envelope
// expires: fleet_envelope_expired, and nothing changes on the host.
func TestEnvelopeExpiredFreeze(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	now := time.Now()
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{ExpiresIn: time.Hour, Now: now}); err != nil {
		t.Fatal(err)
	}
	if r, err := provisionAt(t, f, h, now.Add(59*time.Minute)); err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("within the lifetime: %v %+v", err, r)
	}
	r, err := provisionAt(t, f, h, now.Add(61*time.Minute))
	if !hosttest.HasCode(t, err, blocking.FleetEnvelopeExpired) || r != nil {
		t.Fatalf("frozen envelope: %v %+v", err, r)
	}
}

// TestRevocationsExpired: an expired revocation list is refused
// (fleet_revocations_expired), but what it revokes is still revoked here.
func TestRevocationsExpired(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	now := time.Now()
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	other := digest.FromString("another release")
	if _, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, other, "recall", "Auditor", now, fleet.RevocationOptions{Options: fleet.Options{ExpiresIn: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	_, err := provisionAt(t, f, h, now.Add(2*time.Hour))
	if !hosttest.HasCode(t, err, blocking.FleetRevocationsExpired) {
		t.Fatalf("expired list: %v", err)
	}
	opened, err := host.Open(ctx, h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	var stored []admit.RevocationRow
	err = opened.Snapshot(ctx, func(tx *sql.Tx) (err error) {
		_, stored, err = admit.RowsIn(ctx, tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var revs []admit.RevocationRow
	for _, r := range stored {
		if r.ArtifactDigest == other.String() {
			revs = append(revs, r)
		}
	}
	if len(revs) != 1 {
		t.Fatalf("the expired list's revocation was not applied: %v", revs)
	}
}

// TestRepublishRefreshes: republishing leaves an unchanged envelope and
// revocation list alone until they are past half their lifetime, then
// re-signs them with a higher sequence and a new lifetime, which hosts
// take.
func TestRepublishRefreshes(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	start := time.Now().UTC().Truncate(time.Second)
	opts := func(at time.Duration) fleet.Options {
		return fleet.Options{ExpiresIn: 10 * time.Hour, Now: start.Add(at)}
	}
	first, err := fleet.Publish(ctx, spec, f.Key.Signer, opts(0))
	if err != nil || !first[0].Changed {
		t.Fatalf("first: %v %+v", err, first)
	}
	if _, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, digest.FromString("x"), "recall", "Auditor", start, fleet.RevocationOptions{Options: opts(0)}); err != nil {
		t.Fatal(err)
	}
	early, err := fleet.Publish(ctx, spec, f.Key.Signer, opts(4*time.Hour))
	if err != nil || early[0].Changed || early[0].Digest != first[0].Digest {
		t.Fatalf("before half the lifetime: %v %+v", err, early)
	}
	if list, err := fleet.RefreshRevocations(ctx, spec, f.Key.Signer, opts(4*time.Hour)); err != nil || list != nil {
		t.Fatalf("revocations before half the lifetime: %v %+v", err, list)
	}
	late, err := fleet.Publish(ctx, spec, f.Key.Signer, opts(6*time.Hour))
	if err != nil || !late[0].Changed || late[0].Seq <= first[0].Seq {
		t.Fatalf("past half the lifetime: %v %+v", err, late)
	}
	list, err := fleet.RefreshRevocations(ctx, spec, f.Key.Signer, opts(6*time.Hour))
	if err != nil || list == nil || list.Seq != 2 || !list.ExpiresAt.Equal(start.Add(16*time.Hour)) {
		t.Fatalf("revocations past half the lifetime: %v %+v", err, list)
	}
	// At 12 h the first documents would have expired; the refreshed ones
	// hold.
	if r, err := provisionAt(t, f, h, start.Add(12*time.Hour)); err != nil || r.Status.State != fleet.Bound || r.Status.RevocationsSeq != 2 {
		t.Fatalf("provision after the refresh: %v %+v", err, r)
	}
}

// TestRepublishOneRequestPerUnchangedHost: republishing an unchanged
// fleet reads one manifest per host and writes nothing.
func TestRepublishOneRequestPerUnchangedHost(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	cost := func(n int) int64 {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("h%03d", i)
		}
		spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, ids, "")))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
			t.Fatal(err)
		}
		f.Registry.ResetCounters()
		pubs, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pubs {
			if p.Changed {
				t.Fatalf("republish wrote %+v", p)
			}
		}
		return f.Registry.Requests()
	}
	one, many := cost(1), cost(41)
	if many-one != 40 {
		t.Fatalf("40 more unchanged hosts cost %d more requests, want 40", many-one)
	}
}

// TestOverLongExpiryIsBounded: a lifetime over 30 days is refused before
// the registry is asked anything; a host refuses an over-long envelope
// already out there (as a publisher older than the bound wrote it), and
// the next publish re-signs it rather than keep it, after which the host
// takes it.
func TestOverLongExpiryIsBounded(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec := f.LoadSpec("h01")
	now := time.Now().UTC().Truncate(time.Second)
	long := fleet.Options{ExpiresIn: 1000000 * time.Hour, Now: now}
	before := f.Registry.Requests()
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, long); !hosttest.HasCode(t, err, blocking.FleetExpiryInvalid) {
		t.Fatalf("publish: %v", err)
	}
	if _, err := fleet.RefreshRevocations(ctx, spec, f.Key.Signer, long); !hosttest.HasCode(t, err, blocking.FleetExpiryInvalid) {
		t.Fatalf("refresh: %v", err)
	}
	if _, _, err := fleet.PublishRevocation(ctx, spec, f.Key.Signer, digest.FromString("x"), "recall", "Auditor", now, fleet.RevocationOptions{Options: long}); !hosttest.HasCode(t, err, blocking.FleetExpiryInvalid) {
		t.Fatalf("revocation: %v", err)
	}
	if f.Registry.Requests() != before {
		t.Fatal("a refused lifetime reached the registry")
	}

	old, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Unbounded(long))
	if err != nil || !old[0].Changed {
		t.Fatalf("an older publisher's over-long envelope: %v %+v", err, old)
	}
	if _, err := provisionAt(t, f, h, now.Add(time.Minute)); !hosttest.HasCode(t, err, blocking.FleetEnvelopeInvalid) {
		t.Fatalf("a host took an over-long envelope: %v", err)
	}
	again, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{Now: now.Add(time.Hour)})
	if err != nil || !again[0].Changed || again[0].Seq <= old[0].Seq {
		t.Fatalf("the over-long envelope was kept: %v %+v", err, again)
	}
	if r, err := provisionAt(t, f, h, now.Add(time.Hour+time.Minute)); err != nil || r.Status.State != fleet.Bound {
		t.Fatalf("after the re-sign: %v %+v", err, r)
	}
}
