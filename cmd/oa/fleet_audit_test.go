package main

import (
	"encoding/json"
	"slices"
	"strings"
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
	if !slices.Equal(r.Wrong, []string{"h3", "h4"}) || r.Hosts[0].Size != 1000 || r.Hosts[2].Problems[0].Code != "fleet_log_stale" || r.Hosts[3].Problems[0].Code != "fleet_log_missing" {
		t.Fatalf("report %s", out)
	}
	if !strings.Contains(errOut, "fleet_log_stale") || !strings.Contains(errOut, "h4") || strings.Contains(errOut, state) {
		t.Fatalf("refusal %s", errOut)
	}
	out, _, code = oaProc(t, "", "fleet", "audit", "--fleet", specFile, "--state", state)
	if code != 2 || !strings.Contains(out, "same") || !strings.Contains(out, "4 hosts audited, 2 hosts wrong") {
		t.Fatalf("second audit exit %d\n%s", code, out)
	}
	if _, errOut, code := oaProc(t, "", "explain", "fleet_log_forked"); code != 0 || errOut != "" {
		t.Fatalf("explain: %d %s", code, errOut)
	}
}
