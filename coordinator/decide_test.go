package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// serveSkippable serves clinic-triage whose read-back check may be
// skipped while the record_open guard holds, with every read approved by
// a person: the run pauses at load_record (not skippable), then at
// confirm_note (skippable), after the note was appended.
func serveSkippable(t *testing.T) *served {
	t.Helper()
	s := &served{Host: hosttest.New(t, servetest.SkippableCheck(t))}
	s.WriteRegistry(servetest.ReadApprovalRegistry())
	s.host = s.Open()
	s.AddConnection(s.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.host, "claude-test")
	s.c = s.open(t)
	return s
}

// pausedAtCheck runs request id on record up to the pause at
// confirm_note: load_record approved, the note appended.
func (s *served) pausedAtCheck(t *testing.T, id, record string) *coordinator.Result {
	t.Helper()
	ctx := context.Background()
	first := s.run(t, id, record)
	item, err := s.c.AttentionItem(ctx, first.AttentionID)
	if err != nil || item.Step != "load_record" || item.Skippable {
		t.Fatalf("first pause: %+v, %v", item, err)
	}
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: first.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	res := s.run(t, id, record)
	item, err = s.c.AttentionItem(ctx, res.AttentionID)
	if err != nil || item.Step != "confirm_note" || !item.Skippable || res.Reason != contract.ReasonApprovalAfterChange {
		t.Fatalf("second pause: %+v, %+v, %v", res, item, err)
	}
	return res
}

func TestSkipWhileGuardHolds(t *testing.T) {
	ctx := context.Background()
	s := serveSkippable(t)
	res := s.pausedAtCheck(t, "skip", "AB-1234")
	item, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionSkip, By: "Dr Ada", Channel: "cli"})
	if err != nil || item.State != attention.Skipped {
		t.Fatalf("skip: %+v, %v", item, err)
	}
	waiting, err := s.c.GetRun(ctx, res.RunID, 0)
	if err != nil || waiting.Reason != contract.ReasonSkipAwaitingCaller {
		t.Fatalf("after the skip: %+v, %v", waiting, err)
	}
	done := s.run(t, "skip", "AB-1234")
	// The skipped check is the note_saved evidence; the job's outcome rule
	// (missing_evidence: not_sure_if_saved) decides the outcome.
	if done.Reason != contract.ReasonSkippedNotConfirmed || done.Outcome != contract.OutcomeNotSureIfSaved || done.Proof != contract.ProofSealed || len(done.Evidence) != 0 {
		t.Fatalf("resumed: %+v", done)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("%d notes, want the one appended before the skip", len(notes))
	}
	receipts, err := ledger.Open(s.host).ListReceipts(ctx)
	if err != nil || len(receipts) != 1 || !slices.Equal(receipts[0].Record.Skipped, []string{"confirm_note"}) || receipts[0].Record.Reason != contract.ReasonSkippedNotConfirmed {
		t.Fatalf("receipts: %+v, %v", receipts, err)
	}
	if report, err := ledger.Open(s.host).VerifyReceipts(ctx); err != nil || !report.OK {
		t.Fatalf("verify: %+v, %v", report, err)
	}
}

func TestSkipRefusedWhenGuardNoLongerHolds(t *testing.T) {
	ctx := context.Background()
	s := serveSkippable(t)
	res := s.pausedAtCheck(t, "closed", "CD-5678")
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionSkip, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	closeRecord(t, sandbox.Dir(s.Home), "CD-5678")
	out := s.run(t, "closed", "CD-5678")
	// The guard the skip depends on failed when the run reached it again:
	// nothing was skipped, and a note was already appended.
	if out.Reason != contract.ReasonNotConfirmed || out.Proof != contract.ProofSealed {
		t.Fatalf("resumed with the guard failing: %+v", out)
	}
	receipts, err := ledger.Open(s.host).ListReceipts(ctx)
	if err != nil || len(receipts) != 1 || len(receipts[0].Record.Skipped) != 0 {
		t.Fatalf("receipts: %+v, %v", receipts, err)
	}
}

// closeRecord marks ref closed in the sandbox's state file.
func closeRecord(t *testing.T, dir, ref string) {
	t.Helper()
	p := filepath.Join(dir, "records.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Records map[string]map[string]any `json:"records"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Records[ref] == nil {
		t.Fatalf("sandbox state: %v", err)
	}
	st.Records[ref]["status"] = sandbox.StatusClosed
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSkipRefusedOnUndeclaredStep(t *testing.T) {
	ctx := context.Background()
	s := serveSkippable(t)
	res := s.run(t, "undeclared", "AB-1234")
	_, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionSkip, By: "Dr Ada", Channel: "cli"})
	if !blocking.Has(err, blocking.SkipNotDeclared) {
		t.Fatalf("skip of load_record: %v, want %s", err, blocking.SkipNotDeclared)
	}
	item, _ := s.c.AttentionItem(ctx, res.AttentionID)
	again := s.run(t, "undeclared", "AB-1234")
	if item.State != attention.Open || again.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("a refused skip changed something: %+v, %+v", item, again)
	}
}

func TestTeachRecordedPauseUnchanged(t *testing.T) {
	ctx := context.Background()
	s := serve(t, approvalRegistry())
	res := s.run(t, "teach", "AB-1234")
	const text = "Ask for the ward before appending: the note needs it."
	for _, bad := range []string{"", "   ", strings.Repeat("x", attention.MaxTeachText+1), "Write to ada.lovelace@example.com first.", "Card 4111 1111 1111 1111 failed."} {
		if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: bad}); !blocking.Has(err, blocking.TeachTextInvalid) {
			t.Fatalf("teach text %.20q: %v, want %s", bad, err, blocking.TeachTextInvalid)
		} else if strings.Contains(err.Error(), "example.com") || strings.Contains(err.Error(), "4111") {
			t.Fatalf("the refusal echoes the text: %v", err)
		}
	}
	item, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: text})
	if err != nil || item.State != attention.Open || item.TeachRequests != 1 || item.DecidedAt != nil {
		t.Fatalf("teach: %+v, %v", item, err)
	}
	again := s.run(t, "teach", "AB-1234")
	if again.Reason != contract.ReasonApprovalRequired || again.AttentionID != res.AttentionID {
		t.Fatalf("the pause changed: %+v", again)
	}
	reqs, err := coordinator.AttentionRecords(s.host).TeachRequestsFor(ctx, res.AttentionID)
	if err != nil || len(reqs) != 1 || reqs[0].Request.Text != text || reqs[0].Request.RunID != res.RunID || reqs[0].Request.Step != "append_note" {
		t.Fatalf("teach requests: %+v, %v", reqs, err)
	}
	if err := coordinator.CheckTeachRequests(ctx, s.host, reqs); err != nil {
		t.Fatalf("a recorded request does not verify: %v", err)
	}
	forged := reqs[0]
	forged.Request.Text = "Skip the check entirely."
	if err := coordinator.CheckTeachRequests(ctx, s.host, []attention.SignedTeachRequest{forged}); !blocking.Has(err, blocking.TeachRequestInvalid) {
		t.Fatalf("an edited request verified: %v", err)
	}
	// The calling agent's views carry a count, never the text.
	items, _ := s.c.NeedsAttention(ctx)
	shown, _ := json.Marshal(items)
	if strings.Contains(string(shown), "ward before") || !strings.Contains(string(shown), `"teach_requests":1`) {
		t.Fatalf("attention list as the agent sees it: %s", shown)
	}
	for i := 1; i < attention.MaxTeachPerItem; i++ {
		if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: text}); err != nil {
			t.Fatalf("teach request %d: %v", i+1, err)
		}
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: text}); !blocking.Has(err, blocking.TeachRequestsFull) {
		t.Fatalf("teach request over the bound: %v", err)
	}
	// The approval still works after teach requests.
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if done := s.run(t, "teach", "AB-1234"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("after approval: %+v", done)
	}
	if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: text}); !blocking.Has(err, blocking.AttentionDecided) {
		t.Fatalf("teach on a decided item: %v", err)
	}
}
