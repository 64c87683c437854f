package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// served is a bound clinic deployment on the sandbox connector, opened
// (coordtest.Serve), with the coordinator's own names for its parts.
type served struct {
	*hosttest.Host
	host *host.Host
	c    *coordinator.Coordinator
}

func serve(t *testing.T, registry string) *served {
	t.Helper()
	k := coordtest.Serve(t, registry)
	return &served{Host: k.Host, host: k.H, c: k.C}
}

func (s *served) open(t *testing.T) *coordinator.Coordinator {
	t.Helper()
	return coordtest.Open(t, s.Home)
}

func inputs(record string) json.RawMessage { return coordtest.Inputs(record) }

func (s *served) run(t *testing.T, requestID, record string) *coordinator.Result {
	t.Helper()
	res, err := s.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs(record), RequestID: requestID, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSandboxCasesGiveEachOutcome(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	cases := []struct {
		record  string
		outcome contract.Outcome
		reason  contract.Reason
		notes   int
	}{
		{"AB-1234", contract.OutcomeDone, contract.ReasonVerified, 1},
		{"DU-0001", contract.OutcomeNeedsReview, contract.ReasonDuplicateRecord, 0},
		{"FS-0001", contract.OutcomeNotSureIfSaved, contract.ReasonNotConfirmed, 0},
		{"TO-0001", contract.OutcomeNotSureIfSaved, contract.ReasonEffectTimeout, 1},
		{"OF-0001", contract.OutcomeDidNotRun, contract.ReasonAppOffline, 0},
		{"CL-0001", contract.OutcomeDidNotRun, contract.ReasonGuardFailed, 0},
	}
	for i, c := range cases {
		res := s.run(t, fmt.Sprintf("req-%d", i), c.record)
		wantResult(t, c.record, res, c.outcome, c.reason)
		if res.Proof != contract.ProofSealed {
			t.Fatalf("%s: proof %s, want %s", c.record, res.Proof, contract.ProofSealed)
		}
		if res.ReceiptDigest == "" {
			t.Fatalf("%s: no receipt digest", c.record)
		}
		info, _ := c.reason.Info()
		if res.SafeToRetry != info.SafeToRetry {
			t.Fatalf("%s: safe to retry %v, want the reason's fixed %v", c.record, res.SafeToRetry, info.SafeToRetry)
		}
		if res.WhatHappened != info.WhatHappened {
			t.Fatalf("%s: what happened %q, want the reason's fixed copy %q", c.record, res.WhatHappened, info.WhatHappened)
		}
		notes, _ := sandbox.Notes(sandbox.Dir(s.Home), c.record)
		if len(notes) != c.notes {
			t.Fatalf("%s: %d notes written, want %d", c.record, len(notes), c.notes)
		}
		if strings.Contains(fmt.Sprint(*res), "cough") {
			t.Fatalf("%s: the result echoes an input value", c.record)
		}
	}
	report, err := ledger.Open(s.host).VerifyReceipts(context.Background())
	if err != nil {
		t.Fatalf("receipts: %v", err)
	}
	if !report.OK {
		t.Errorf("receipts do not verify: %+v", report)
	}
	if report.Receipts != len(cases) {
		t.Errorf("%d receipts, want %d", report.Receipts, len(cases))
	}
}

func TestRequestIDReplayConflictAndRetry(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	first := s.run(t, "once", "AB-1234")
	again := s.run(t, "once", "AB-1234")
	if first.Outcome != contract.OutcomeDone {
		t.Fatalf("first run: outcome %s (reason %s), want %s", first.Outcome, first.Reason, contract.OutcomeDone)
	}
	if !again.Replayed {
		t.Errorf("the same request again was not replayed: %+v", again)
	}
	if again.RunID != first.RunID {
		t.Errorf("replay: run %q, want the first's %q", again.RunID, first.RunID)
	}
	if again.ReceiptDigest != first.ReceiptDigest {
		t.Errorf("replay: receipt %q, want the first's %q", again.ReceiptDigest, first.ReceiptDigest)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("a replay wrote again: %d notes", len(notes))
	}
	conflict := s.run(t, "once", "CD-5678")
	wantResult(t, "conflict", conflict, contract.OutcomeDidNotRun, contract.ReasonRequestIDConflict)
	if conflict.SafeToRetry {
		t.Errorf("conflict: safe to retry, want not")
	}
	// Offline proves nothing was written: the same request may try again,
	// at most MaxAttempts times.
	var last *coordinator.Result
	for i := 1; i <= coordinator.MaxAttempts+1; i++ {
		last = s.run(t, "offline", "OF-0002")
		if i > coordinator.MaxAttempts {
			continue
		}
		if last.Attempt != i {
			t.Fatalf("attempt %d: the result counts attempt %d", i, last.Attempt)
		}
		if last.Reason != contract.ReasonAppOffline {
			t.Fatalf("attempt %d: reason %s, want %s", i, last.Reason, contract.ReasonAppOffline)
		}
	}
	if last.Reason != contract.ReasonAttemptsExhausted {
		t.Fatalf("after %d attempts: %+v", coordinator.MaxAttempts, last)
	}
	bad, err := s.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: json.RawMessage(`{"record_ref":"nope"}`), RequestID: "bad", Wait: time.Second})
	if err != nil {
		t.Fatalf("invalid inputs: %v", err)
	}
	if bad.Reason != contract.ReasonInvalidInputs {
		t.Fatalf("invalid inputs: reason %s, want %s", bad.Reason, contract.ReasonInvalidInputs)
	}
	if _, err := s.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs("AB-1234")}); err == nil {
		t.Fatal("a run without request_id was accepted")
	}
}

func approvalRegistry() string {
	return strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Append one note to a record."`, "description: \"Append one note to a record.\"\n\t\tapproval: \"required\"", 1)
}

func TestApprovalPausesAndResumesWithoutRepeating(t *testing.T) {
	ctx := context.Background()
	s := serve(t, approvalRegistry())
	res := s.run(t, "ask", "AB-1234")
	wantResult(t, "paused", res, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)
	if res.AttentionID == "" {
		t.Fatal("paused: no attention id")
	}
	items, err := s.c.NeedsAttention(ctx)
	if err != nil {
		t.Fatalf("attention: %v", err)
	}
	if len(items) != 1 {
		t.Fatalf("%d attention items, want 1: %+v", len(items), items)
	}
	if items[0].ID != res.AttentionID {
		t.Errorf("attention item %q, want the run's %q", items[0].ID, res.AttentionID)
	}
	if items[0].Capability != "records.note.append" {
		t.Errorf("attention item's capability %q, want records.note.append", items[0].Capability)
	}
	again := s.run(t, "ask", "AB-1234")
	if again.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("asking again before a decision: reason %s, want %s", again.Reason, contract.ReasonApprovalRequired)
	}
	if !again.Replayed {
		t.Fatalf("asking again before a decision was not replayed: %+v", again)
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "Dr Bob", Channel: "cli"}); err == nil {
		t.Fatal("a decided item was decided again")
	}
	done := s.run(t, "ask", "AB-1234")
	if done.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed: outcome %s (reason %s), want %s", done.Outcome, done.Reason, contract.OutcomeDone)
	}
	if done.RunID != res.RunID {
		t.Fatalf("resumed: run %q, want the paused %q", done.RunID, res.RunID)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("%d notes after approval, want 1", len(notes))
	}
	// Rejected: did_not_run, sealed.
	res = s.run(t, "no", "CD-5678")
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	rejected := s.run(t, "no", "CD-5678")
	if rejected.Reason != contract.ReasonRejected {
		t.Errorf("rejected: reason %s, want %s", rejected.Reason, contract.ReasonRejected)
	}
	if rejected.Proof != contract.ProofSealed {
		t.Errorf("rejected: proof %s, want %s", rejected.Proof, contract.ProofSealed)
	}
	report, _ := ledger.Open(s.host).VerifyReceipts(ctx)
	if !report.OK {
		t.Errorf("receipts do not verify: %+v", report)
	}
	if report.Receipts != 2 {
		t.Errorf("%d receipts, want 2", report.Receipts)
	}
}

func TestPlanChangeRefusesTheEffect(t *testing.T) {
	ctx := context.Background()
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	s.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), "Read one record", "Read exactly one record", 1))
	res := s.run(t, "changed", "AB-1234")
	wantResult(t, "registry changed mid-session", res, contract.OutcomeDidNotRun, contract.ReasonPlanChanged)
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 0 {
		t.Fatal("a refused run wrote")
	}
	if _, err := coordinator.Open(ctx, coordinator.Options{Home: s.Home, Deployment: "clinic"}); err == nil {
		t.Fatal("a session started on a changed plan")
	}
	s.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	if _, err := admit.Revoke(ctx, s.host, s.Release.Descriptor.Digest.String(), "withdrawn", "Dr Ada", s.Now); err != nil {
		t.Fatal(err)
	}
	if res := s.run(t, "revoked", "AB-1234"); res.Reason != contract.ReasonNotAdmitted {
		t.Fatalf("revoked mid-session: %+v", res)
	}
}

// TestConcurrentResumeSendsOnce: two callers ask to continue the same
// approved run at once; the effect is sent once.
func TestConcurrentResumeSendsOnce(t *testing.T) {
	ctx := context.Background()
	s := serve(t, approvalRegistry())
	res := s.run(t, "twice", "CD-5678")
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	before, _ := sandbox.Notes(sandbox.Dir(s.Home), "CD-5678")
	var wg sync.WaitGroup
	results := make([]*coordinator.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.run(t, "twice", "CD-5678")
		}()
	}
	wg.Wait()
	after, _ := sandbox.Notes(sandbox.Dir(s.Home), "CD-5678")
	if len(after) != len(before)+1 {
		t.Fatalf("%d notes written by two resumes, want 1", len(after)-len(before))
	}
	for _, r := range results {
		if r.RunID != res.RunID {
			t.Fatalf("a resume answered another run: %+v", r)
		}
	}
	// A decision on an item its run no longer waits on is refused.
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "Dr Bob", Channel: "cli"}); err == nil {
		t.Fatal("a decided item was decided again")
	}
}
