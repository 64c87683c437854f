package fleet_test

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// syncRounds runs fleet.Sync for h until it has seen n rounds, and
// returns each round's result and error.
func syncRounds(t *testing.T, h *fleettest.Host, envelope string, n int) ([]*fleet.Result, []error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var results []*fleet.Result
	var errs []error
	err := fleet.Sync(ctx, h.Home, envelope, fleet.SyncOptions{
		ProvisionOptions: fleet.ProvisionOptions{Probe: true, Connector: connector.Options{SandboxDir: sandbox.Dir(h.Home)}, Version: "test"},
		Interval:         fleet.MinSyncInterval,
		Round: func(r *fleet.Result, err error) {
			results, errs = append(results, r), append(errs, err)
			if len(results) == n {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatalf("Sync ended with %v, want nil once its context is done", err)
	}
	return results, errs
}

// TestSyncKeepsHostInStep: the sync loop binds the host in its first
// round, finds nothing changed in the next, and ends when its context
// does.
func TestSyncKeepsHostInStep(t *testing.T) {
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Publish(context.Background(), spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	results, errs := syncRounds(t, h, f.Repository+":"+fleet.EnvelopeTag(h.ID), 2)
	if len(results) != 2 {
		t.Fatalf("%d rounds, want 2", len(results))
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if results[0].Status.State != fleet.Bound || results[0].Unchanged {
		t.Fatalf("first round: %+v, want bound", results[0].Status)
	}
	if !results[1].Unchanged || results[1].Status.State != fleet.Bound {
		t.Fatalf("second round: unchanged=%v state %s, want unchanged and bound", results[1].Unchanged, results[1].Status.State)
	}
}

// TestSyncGoesOnAfterARefusal: a round that is refused (here: no envelope
// was published for the host) is reported and the next round runs all the
// same.
func TestSyncGoesOnAfterARefusal(t *testing.T) {
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	_, errs := syncRounds(t, h, f.Repository+":"+fleet.EnvelopeTag(h.ID), 2)
	if len(errs) != 2 {
		t.Fatalf("%d rounds, want 2", len(errs))
	}
	for i, err := range errs {
		if blocking.Refusals(err) == nil {
			t.Fatalf("round %d: %v, want a refusal", i, err)
		}
	}
}

// TestSyncRefusesShortInterval: an interval under MinSyncInterval is
// refused before any round runs.
func TestSyncRefusesShortInterval(t *testing.T) {
	rounds := 0
	err := fleet.Sync(context.Background(), t.TempDir(), "localhost:1/fleet:host-h01", fleet.SyncOptions{Interval: fleet.MinSyncInterval / 2, Round: func(*fleet.Result, error) { rounds++ }})
	if !blocking.Has(err, blocking.FleetIntervalInvalid) || rounds != 0 {
		t.Fatalf("err %v after %d rounds, want fleet_interval_invalid before any", err, rounds)
	}
}
