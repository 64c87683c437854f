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
		if res.Outcome != c.outcome || res.Reason != c.reason || res.Proof != contract.ProofSealed || res.ReceiptDigest == "" {
			t.Fatalf("%s: %+v, want %s/%s sealed", c.record, res, c.outcome, c.reason)
		}
		info, _ := c.reason.Info()
		if res.SafeToRetry != info.SafeToRetry || res.WhatHappened != info.WhatHappened {
			t.Fatalf("%s: copy is not the reason's fixed copy: %+v", c.record, res)
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
	if err != nil || !report.OK || report.Receipts != len(cases) {
		t.Fatalf("receipts: %+v, %v", report, err)
	}
}

func TestRequestIDReplayConflictAndRetry(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	first := s.run(t, "once", "AB-1234")
	again := s.run(t, "once", "AB-1234")
	if first.Outcome != contract.OutcomeDone || !again.Replayed || again.RunID != first.RunID || again.ReceiptDigest != first.ReceiptDigest {
		t.Fatalf("replay: %+v then %+v", first, again)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("a replay wrote again: %d notes", len(notes))
	}
	conflict := s.run(t, "once", "CD-5678")
	if conflict.Reason != contract.ReasonRequestIDConflict || conflict.Outcome != contract.OutcomeDidNotRun || conflict.SafeToRetry {
		t.Fatalf("conflict: %+v", conflict)
	}
	// Offline proves nothing was written: the same request may try again,
	// at most MaxAttempts times.
	var last *coordinator.Result
	for i := 1; i <= coordinator.MaxAttempts+1; i++ {
		last = s.run(t, "offline", "OF-0002")
		if i <= coordinator.MaxAttempts && (last.Attempt != i || last.Reason != contract.ReasonAppOffline) {
			t.Fatalf("attempt %d: %+v", i, last)
		}
	}
	if last.Reason != contract.ReasonAttemptsExhausted {
		t.Fatalf("after %d attempts: %+v", coordinator.MaxAttempts, last)
	}
	bad, err := s.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: json.RawMessage(`{"record_ref":"nope"}`), RequestID: "bad", Wait: time.Second})
	if err != nil || bad.Reason != contract.ReasonInvalidInputs {
		t.Fatalf("invalid inputs: %+v, %v", bad, err)
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
	if res.Outcome != contract.OutcomeNeedsReview || res.Reason != contract.ReasonApprovalRequired || res.AttentionID == "" {
		t.Fatalf("paused: %+v", res)
	}
	items, err := s.c.NeedsAttention(ctx)
	if err != nil || len(items) != 1 || items[0].ID != res.AttentionID || items[0].Capability != "records.note.append" {
		t.Fatalf("attention: %+v, %v", items, err)
	}
	if again := s.run(t, "ask", "AB-1234"); again.Reason != contract.ReasonApprovalRequired || !again.Replayed {
		t.Fatalf("asking again before a decision: %+v", again)
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "Dr Bob", Channel: "cli"}); err == nil {
		t.Fatal("a decided item was decided again")
	}
	done := s.run(t, "ask", "AB-1234")
	if done.Outcome != contract.OutcomeDone || done.RunID != res.RunID {
		t.Fatalf("resumed: %+v", done)
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
	if rejected.Reason != contract.ReasonRejected || rejected.Proof != contract.ProofSealed {
		t.Fatalf("rejected: %+v", rejected)
	}
	if report, _ := ledger.Open(s.host).VerifyReceipts(ctx); !report.OK || report.Receipts != 2 {
		t.Fatalf("receipts: %+v", report)
	}
}

func TestPlanChangeRefusesTheEffect(t *testing.T) {
	ctx := context.Background()
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	s.WriteRegistry(strings.Replace(resolve.StarterRegistry(hosttest.Name), "Read one record", "Read exactly one record", 1))
	res := s.run(t, "changed", "AB-1234")
	if res.Outcome != contract.OutcomeDidNotRun || res.Reason != contract.ReasonPlanChanged {
		t.Fatalf("registry changed mid-session: %+v", res)
	}
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
