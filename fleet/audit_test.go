package fleet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// audit runs one fleet audit at now with state in dir.
func audit(t *testing.T, spec *fleet.Spec, dir string, now time.Time) *fleet.AuditReport {
	t.Helper()
	r, err := fleet.Audit(context.Background(), spec, fleet.AuditOptions{Options: fleet.Options{Now: now}, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// publishLog publishes h's log checkpoint at now.
func publishLog(t *testing.T, f *fleettest.Fleet, h *fleettest.Host, now time.Time) *fleet.LogPublished {
	t.Helper()
	p, err := fleet.PublishLog(context.Background(), h.Home, f.Repository, fleet.ProvisionOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// problems maps each host to its problem codes.
func problems(r *fleet.AuditReport) map[string][]blocking.Code {
	out := map[string][]blocking.Code{}
	for _, h := range r.Hosts {
		for _, p := range h.Problems {
			out[h.Host] = append(out[h.Host], p.Code)
		}
	}
	return out
}

// TestFleetAuditHealthyThroughProvision: hosts provisioned from their
// envelopes publish their cosigned checkpoints (full runs and unchanged
// ones alike); the audit of the healthy fleet names no host, first
// trusting what it sees, then proving each grown log consistent with
// the checkpoint it saw.
func TestFleetAuditHealthyThroughProvision(t *testing.T) {
	ctx := context.Background()
	f := fleettest.New(t)
	w := fleettest.NewWitness(t, "witness.example")
	ids := []string{"h01", "h02"}
	var hosts []*fleettest.Host
	for _, id := range ids {
		h := f.NewHost(id, fleettest.HostOptions{PreApprove: true})
		f.AddWitnesses(h, 1, w)
		f.AppendLog(h, 3)
		f.Cosign(h, w)
		hosts = append(hosts, h)
	}
	spec := f.LoadSpec(ids...)
	if _, err := fleet.Publish(ctx, spec, f.Key.Signer, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		res, err := provision(t, f, h)
		if err != nil || res.Log == nil || !res.Log.Changed || res.Log.Size != 3 || res.Log.Cosignatures != 1 {
			t.Fatalf("%s: %v %+v", h.ID, err, res)
		}
	}
	dir := t.TempDir()
	r := audit(t, spec, dir, time.Now())
	if err := r.Err(); err != nil || len(r.Wrong) != 0 {
		t.Fatalf("healthy fleet: %v %+v", err, r.Hosts)
	}
	for _, h := range r.Hosts {
		if h.Size != 3 || h.Consistency != fleet.ConsistencyFirst || !slices.Equal(h.Cosigners, []string{"witness.example"}) || h.Signed != fleet.SignedSelf {
			t.Fatalf("first audit %+v", h)
		}
	}
	// The logs grow; an unchanged provisioning run publishes the new
	// checkpoint with the proof from the one before, and the audit checks it.
	for _, h := range hosts {
		f.AppendLog(h, 5)
		f.Cosign(h, w)
		res, err := provision(t, f, h)
		if err != nil || !res.Unchanged || res.Log == nil || !res.Log.Changed || res.Log.Size != 8 {
			t.Fatalf("%s again: %v %+v", h.ID, err, res)
		}
		again, err := provision(t, f, h)
		if err != nil || again.Log == nil || again.Log.Changed {
			t.Fatalf("%s unchanged log republished: %v %+v", h.ID, err, again.Log)
		}
	}
	r = audit(t, spec, dir, time.Now())
	if err := r.Err(); err != nil {
		t.Fatalf("grown fleet: %v", err)
	}
	for _, h := range r.Hosts {
		if h.Size != 8 || h.LastSize != 3 || h.Consistency != fleet.ConsistencyProved {
			t.Fatalf("second audit %+v", h)
		}
	}
}

// TestFleetAuditNamesWrongHosts: a host that forks (same size, another
// root; or a larger tree whose proof from the size seen fails), rolls
// back, stops publishing, lacks its witness quorum or never published is
// each named with its code, and the auditor's state keeps what it saw
// before a fork or rollback.
func TestFleetAuditNamesWrongHosts(t *testing.T) {
	f := fleettest.New(t)
	w := fleettest.NewWitness(t, "witness.example")
	now := time.Now()
	ids := []string{"good", "fork", "fork2", "back", "quiet", "lonely", "absent"}
	hosts := map[string]*fleettest.Host{}
	for _, id := range ids {
		h := f.NewHost(id, fleettest.HostOptions{})
		f.AddWitnesses(h, 1, w)
		hosts[id] = h
	}
	grow := func(h *fleettest.Host, n int, cosign bool) {
		f.AppendLog(h, n)
		if cosign {
			f.Cosign(h, w)
		}
	}
	for _, id := range []string{"good", "fork", "fork2", "back", "quiet"} {
		grow(hosts[id], 3, true)
	}
	forkCopy, fork2Copy, backCopy := f.CopyHost(hosts["fork"]), f.CopyHost(hosts["fork2"]), f.CopyHost(hosts["back"])
	grow(hosts["fork"], 1, true)
	grow(hosts["fork2"], 1, true)
	grow(hosts["back"], 2, true)
	grow(hosts["lonely"], 2, false)
	for _, id := range []string{"good", "fork", "fork2", "back", "lonely"} {
		publishLog(t, f, hosts[id], now)
	}
	publishLog(t, f, hosts["quiet"], now.Add(-time.Hour))

	spec := f.LoadSpec(ids...)
	dir := t.TempDir()
	r := audit(t, spec, dir, now)
	want := map[string][]blocking.Code{
		"quiet":  {blocking.FleetLogStale},
		"lonely": {blocking.FleetLogQuorum},
		"absent": {blocking.FleetLogMissing},
	}
	if got := problems(r); !equalCodes(got, want) || !slices.Equal(r.Wrong, []string{"absent", "lonely", "quiet"}) {
		t.Fatalf("first audit: %v, wrong %v", got, r.Wrong)
	}
	if !blocking.Has(r.Err(), blocking.FleetLogStale) {
		t.Fatalf("verdict %v", r.Err())
	}

	// good grows; fork's copy shows size 4 with another fourth entry;
	// fork2's copy grows to 6 from its own fourth entry, its proof from
	// size 4 (the size published under the tag) failing against what the
	// auditor saw; back's copy, an old restore, publishes size 3 after 5.
	grow(hosts["good"], 2, true)
	publishLog(t, f, hosts["good"], now)
	grow(forkCopy, 1, true)
	publishLog(t, f, forkCopy, now)
	grow(fork2Copy, 3, true)
	if p := publishLog(t, f, fork2Copy, now); p.Size != 6 {
		t.Fatalf("fork2 copy published %+v", p)
	}
	publishLog(t, f, backCopy, now)
	for round := range 2 {
		r = audit(t, spec, dir, now)
		want = map[string][]blocking.Code{
			"fork":   {blocking.FleetLogForked},
			"fork2":  {blocking.FleetLogForked},
			"back":   {blocking.FleetLogRolledBack},
			"quiet":  {blocking.FleetLogStale},
			"lonely": {blocking.FleetLogQuorum},
			"absent": {blocking.FleetLogMissing},
		}
		if got := problems(r); !equalCodes(got, want) {
			t.Fatalf("second audit: %v", got)
		}
		for _, h := range r.Hosts {
			switch h.Host {
			case "good":
				if h.Size != 5 || h.Consistency != []string{fleet.ConsistencyProved, fleet.ConsistencySame}[round] {
					t.Fatalf("good %+v", h)
				}
			case "fork", "fork2":
				// The state keeps the checkpoint of size 4 seen first.
				if h.LastSize != 4 {
					t.Fatalf("%s: %+v", h.Host, h)
				}
			case "back":
				if h.LastSize != 5 || h.Size != 3 {
					t.Fatalf("back %+v", h)
				}
			}
		}
	}
	// The verdict names every wrong host, located in the fleet file.
	for _, rr := range blocking.Refusals(r.Err()) {
		if rr.Path == "" || !slices.Contains(r.Wrong, rr.Path[len("hosts."):]) {
			t.Fatalf("refusal %+v", rr)
		}
	}
}

func equalCodes(got, want map[string][]blocking.Code) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			return false
		}
	}
	return true
}
