package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/testkit/fleettest"
)

// TestFleetAuditCLI: oa fleet audit prints every host's log and exits 2
// naming the hosts that are wrong (here one that stopped publishing and
// one that never published), with their codes in --json and the refusal;
// the state it keeps lets the next audit compare.
func TestFleetAuditCLI(t *testing.T) {
	f := fleettest.New(t)
	w := fleettest.NewWitness(t, "witness.example")
	key := fleettest.OtherKey(t)
	f.PushLogs([]string{"h1", "h2"}, key, w, time.Now())
	f.PushLogs([]string{"h3"}, key, w, time.Now().Add(-time.Hour))
	specFile := f.WriteSpec(f.Spec(f.Release, []string{"h1", "h2", "h3", "h4"}, ""))
	state := t.TempDir()
	out, errOut, code := oaProc(t, "", "fleet", "audit", "--fleet", specFile, "--state", state, "--json")
	if code != 2 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var r struct {
		Wrong []string `json:"wrong"`
		Hosts []struct {
			Host     string `json:"host"`
			Size     int64  `json:"size"`
			Problems []struct {
				Code string `json:"code"`
			} `json:"problems"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !slices.Equal(r.Wrong, []string{"h3", "h4"}) {
		t.Errorf("report: wrong hosts %q, want [h3 h4]", r.Wrong)
	}
	if r.Hosts[0].Size != 1000 {
		t.Errorf("report: hosts[0] log size %d, want 1000", r.Hosts[0].Size)
	}
	if c := r.Hosts[2].Problems[0].Code; c != "fleet_log_stale" {
		t.Errorf("report: hosts[2] problem %q, want fleet_log_stale", c)
	}
	if c := r.Hosts[3].Problems[0].Code; c != "fleet_log_missing" {
		t.Errorf("report: hosts[3] problem %q, want fleet_log_missing", c)
	}
	if t.Failed() {
		t.FailNow()
	}
	wantHas(t, "refusal", errOut, "fleet_log_stale", "h4")
	wantLacks(t, "refusal (the state folder)", errOut, state)
	out, _, code = oaProc(t, "", "fleet", "audit", "--fleet", specFile, "--state", state)
	wantExit(t, "second audit", code, 2, out, "")
	wantHas(t, "second audit", out, "same", "4 hosts audited, 2 hosts wrong")
	_, errOut, code = oaProc(t, "", "explain", "fleet_log_forked")
	wantExit(t, "explain", code, 0, "", errOut)
	if errOut != "" {
		t.Fatalf("explain: stderr %q, want none", errOut)
	}
}
