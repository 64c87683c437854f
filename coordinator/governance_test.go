package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// governed is a bound clinic deployment on the sandbox, served by a
// coordinator whose clock the test moves.
type governed struct {
	*hosttest.Host
	host  *host.Host
	c     *coordinator.Coordinator
	clock atomic.Pointer[time.Time]
	op    *strings.Builder
}

func newGoverned(t *testing.T) *governed {
	t.Helper()
	g := &governed{Host: hosttest.New(t, nil), op: &strings.Builder{}}
	g.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	g.host = g.Open()
	g.AddConnection(g.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	g.Bind(g.host, "claude-test")
	now := time.Now()
	g.clock.Store(&now)
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: g.Home, Deployment: "clinic", Operator: g.op, EffectTimeout: 5 * time.Second,
		Now: func() time.Time { return *g.clock.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g.c = c
	return g
}

func (g *governed) run(t *testing.T, id, record string) *coordinator.Result {
	t.Helper()
	res, err := g.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"` + record + `","urgency":"soon","summary":"A note."}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestEveryDownstreamStepPassesThePlanCheck changes each link of the
// plan mid-session and runs a workflow whose first step is a read, on the
// sandbox's closed record CL-0001 (a read that reached the server would
// end guard_failed) and on an unknown record (target_refused): the run
// is refused by the plan check with the named reason before anything
// reaches the server, and so is the standalone read tool.
func TestEveryDownstreamStepPassesThePlanCheck(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, g *governed)
		reason contract.Reason
	}{
		{"registry re-signed", func(t *testing.T, g *governed) { g.WriteRegistry(servetest.ApprovalRegistry()) }, contract.ReasonPlanChanged},
		{"registry edited, not signed", func(t *testing.T, g *governed) {
			path := filepath.Join(g.Home, resolve.RegistryFile)
			if err := os.WriteFile(path, []byte(servetest.ApprovalRegistry()), 0o644); err != nil {
				t.Fatal(err)
			}
		}, contract.ReasonPlanChanged},
		{"connection replaced", func(t *testing.T, g *governed) {
			g.AddConnection(g.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
		}, contract.ReasonPlanChanged},
		{"connection disabled", func(t *testing.T, g *governed) {
			if _, err := connection.SetEnabled(ctx, g.host, "sandbox", false, g.Change()); err != nil {
				t.Fatal(err)
			}
		}, contract.ReasonPlanChanged},
		{"release revoked", func(t *testing.T, g *governed) {
			if _, err := admit.Revoke(ctx, g.host, g.Release.Descriptor.Digest.String(), "test", "Test Operator", time.Now()); err != nil {
				t.Fatal(err)
			}
		}, contract.ReasonNotAdmitted},
		{"admission expired", func(t *testing.T, g *governed) {
			later := time.Now().AddDate(50, 0, 0)
			g.clock.Store(&later)
		}, contract.ReasonNotAdmitted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own host and coordinator
			g := newGoverned(t)
			// Before the change the reads reach the sandbox (and the
			// check is remembered, so the change must invalidate it).
			if res := g.run(t, "before-closed", "CL-0001"); res.Reason != contract.ReasonGuardFailed {
				t.Fatalf("before the change, CL-0001: %+v", res)
			}
			if res := g.run(t, "before-unknown", "ZZ-0001"); res.Reason != contract.ReasonTargetRefused {
				t.Fatalf("before the change, ZZ-0001: %+v", res)
			}
			tc.change(t, g)
			for _, record := range []string{"CL-0001", "ZZ-0001", "AB-1234"} {
				res := g.run(t, "after-"+record, record)
				wantResult(t, "after the change, "+record, res, contract.OutcomeDidNotRun, tc.reason)
				if res.RecordChanged != contract.ChangedNo {
					t.Fatalf("after the change, %s: record changed %s, want %s", record, res.RecordChanged, contract.ChangedNo)
				}
			}
			read, err := g.c.Read(ctx, "records.read", json.RawMessage(`{"record":"CL-0001"}`))
			if err != nil {
				t.Fatalf("read tool after the change: %v", err)
			}
			if read.Reason != tc.reason {
				t.Errorf("read tool after the change: reason %s, want %s", read.Reason, tc.reason)
			}
			if read.Content != nil {
				t.Errorf("read tool after the change: content %s, want none", read.Content)
			}
			if !strings.Contains(g.op.String(), "oa coordinator: deployment clinic:") {
				t.Fatalf("the operator was not told:\n%s", g.op)
			}
		})
	}
}

// TestPlanCheckAgreesWithBindCheck: for the same change, the
// coordinator's check (remembered between calls) and a fresh bind.Check,
// as oa bind inspect makes it, give the same verdict.
func TestPlanCheckAgreesWithBindCheck(t *testing.T) {
	ctx := context.Background()
	g := newGoverned(t)
	b, err := bind.Current(ctx, g.host, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	art, err := bind.FetchRelease(ctx, g.host, b, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agree := func(what string, approved bool) {
		t.Helper()
		report, _, err := bind.Check(ctx, g.host, b, art, bind.CheckOptions{Now: *g.clock.Load()})
		if err != nil {
			t.Fatal(err)
		}
		_, cerr := g.c.CheckPlan(ctx)
		if report.Approved != approved {
			t.Fatalf("%s: bind.Check approved=%v (%+v), want %v", what, report.Approved, report.Changes, approved)
		}
		if (cerr == nil) != approved {
			t.Fatalf("%s: the coordinator opened with error %v, want it to open=%v", what, cerr, approved)
		}
		if !approved && report.NotAdmitted() != hosttest.HasCode(t, cerr, blocking.AdmissionNotActive) {
			t.Fatalf("%s: the coordinator refused with %v, bind.Check with %+v", what, cerr, report.Refusals)
		}
	}
	agree("unchanged", true)
	agree("unchanged, remembered", true)
	g.AddConnection(g.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	agree("connection replaced", false)
	report, _, _ := bind.Check(ctx, g.host, b, art, bind.CheckOptions{Now: *g.clock.Load()})
	if len(report.Changes) == 0 || report.Changes[0].Link != bind.LinkConnectionRevision {
		t.Fatalf("the changed link is not named: %+v", report.Changes)
	}
	if _, err := admit.Revoke(ctx, g.host, g.Release.Descriptor.Digest.String(), "test", "Test Operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	agree("revoked", false)
}
