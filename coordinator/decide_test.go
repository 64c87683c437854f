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
	if err != nil {
		t.Fatalf("first pause: %v", err)
	}
	if item.Step != "load_record" {
		t.Fatalf("first pause at step %q, want load_record", item.Step)
	}
	if item.Skippable {
		t.Fatal("first pause: load_record is skippable, want not")
	}
	if _, err := s.c.Decide(ctx, attention.Decision{AttentionID: first.AttentionID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	res := s.run(t, id, record)
	item, err = s.c.AttentionItem(ctx, res.AttentionID)
	if err != nil {
		t.Fatalf("second pause: %v", err)
	}
	if item.Step != "confirm_note" {
		t.Fatalf("second pause at step %q, want confirm_note", item.Step)
	}
	if !item.Skippable {
		t.Fatal("second pause: confirm_note is not skippable, want skippable")
	}
	if res.Reason != contract.ReasonApprovalAfterChange {
		t.Fatalf("second pause: reason %s, want %s", res.Reason, contract.ReasonApprovalAfterChange)
	}
	return res
}

func TestSkipWhileGuardHolds(t *testing.T) {
	ctx := context.Background()
	s := serveSkippable(t)
	res := s.pausedAtCheck(t, "skip", "AB-1234")
	item, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionSkip, By: "Dr Ada", Channel: "cli"})
	if err != nil {
		t.Fatalf("skip: %v", err)
	}
	if item.State != attention.Skipped {
		t.Fatalf("skip: item state %s, want %s", item.State, attention.Skipped)
	}
	waiting, err := s.c.GetRun(ctx, res.RunID, 0)
	if err != nil {
		t.Fatalf("after the skip: %v", err)
	}
	if waiting.Reason != contract.ReasonSkipAwaitingCaller {
		t.Fatalf("after the skip: reason %s, want %s", waiting.Reason, contract.ReasonSkipAwaitingCaller)
	}
	done := s.run(t, "skip", "AB-1234")
	// The skipped check is the note_saved evidence; the job's outcome rule
	// (missing_evidence: not_sure_if_saved) decides the outcome.
	if done.Reason != contract.ReasonSkippedNotConfirmed {
		t.Errorf("resumed: reason %s, want %s", done.Reason, contract.ReasonSkippedNotConfirmed)
	}
	if done.Outcome != contract.OutcomeNotSureIfSaved {
		t.Errorf("resumed: outcome %s, want %s", done.Outcome, contract.OutcomeNotSureIfSaved)
	}
	if done.Proof != contract.ProofSealed {
		t.Errorf("resumed: proof %s, want %s", done.Proof, contract.ProofSealed)
	}
	if len(done.Evidence) != 0 {
		t.Errorf("resumed: evidence %+v, want none", done.Evidence)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("%d notes, want the one appended before the skip", len(notes))
	}
	receipts, err := ledger.Open(s.host).ListReceipts(ctx)
	if err != nil {
		t.Fatalf("receipts: %v", err)
	}
	if len(receipts) != 1 {
		t.Fatalf("%d receipts, want 1", len(receipts))
	}
	if got := receipts[0].Record.Skipped; !slices.Equal(got, []string{"confirm_note"}) {
		t.Errorf("receipt's skipped steps %q, want [confirm_note]", got)
	}
	if got := receipts[0].Record.Reason; got != contract.ReasonSkippedNotConfirmed {
		t.Errorf("receipt's reason %s, want %s", got, contract.ReasonSkippedNotConfirmed)
	}
	if report, err := ledger.Open(s.host).VerifyReceipts(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	} else if !report.OK {
		t.Fatalf("verify: the receipts do not verify: %+v", report)
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
	if out.Reason != contract.ReasonNotConfirmed {
		t.Errorf("resumed with the guard failing: reason %s, want %s", out.Reason, contract.ReasonNotConfirmed)
	}
	if out.Proof != contract.ProofSealed {
		t.Errorf("resumed with the guard failing: proof %s, want %s", out.Proof, contract.ProofSealed)
	}
	receipts, err := ledger.Open(s.host).ListReceipts(ctx)
	if err != nil {
		t.Fatalf("receipts: %v", err)
	}
	if len(receipts) != 1 {
		t.Fatalf("%d receipts, want 1", len(receipts))
	}
	if got := receipts[0].Record.Skipped; len(got) != 0 {
		t.Errorf("receipt's skipped steps %q, want none", got)
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
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("sandbox state: %v", err)
	}
	if st.Records[ref] == nil {
		t.Fatalf("sandbox state has no record %s", ref)
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
	if item.State != attention.Open {
		t.Errorf("after a refused skip: item state %s, want %s", item.State, attention.Open)
	}
	if again.Reason != contract.ReasonApprovalRequired {
		t.Errorf("after a refused skip: reason %s, want %s", again.Reason, contract.ReasonApprovalRequired)
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
		} else {
			for _, echoed := range []string{"example.com", "4111"} {
				if strings.Contains(err.Error(), echoed) {
					t.Fatalf("the refusal echoes %q from the text: %v", echoed, err)
				}
			}
		}
	}
	item, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionTeach, By: "Dr Ada", Channel: "cli", Text: text})
	if err != nil {
		t.Fatalf("teach: %v", err)
	}
	if item.State != attention.Open {
		t.Errorf("teach: item state %s, want %s", item.State, attention.Open)
	}
	if item.TeachRequests != 1 {
		t.Errorf("teach: %d teach requests, want 1", item.TeachRequests)
	}
	if item.DecidedAt != nil {
		t.Errorf("teach: decided at %v, want not decided", item.DecidedAt)
	}
	again := s.run(t, "teach", "AB-1234")
	if again.Reason != contract.ReasonApprovalRequired {
		t.Errorf("after teach: reason %s, want %s", again.Reason, contract.ReasonApprovalRequired)
	}
	if again.AttentionID != res.AttentionID {
		t.Errorf("after teach: attention id %q, want the same %q", again.AttentionID, res.AttentionID)
	}
	reqs, err := coordinator.AttentionRecords(s.host).TeachRequestsFor(ctx, res.AttentionID)
	if err != nil {
		t.Fatalf("teach requests: %v", err)
	}
	if len(reqs) != 1 {
		t.Fatalf("%d teach requests, want 1: %+v", len(reqs), reqs)
	}
	if got := reqs[0].Request; got.Text != text {
		t.Errorf("teach request text %q, want %q", got.Text, text)
	}
	if got := reqs[0].Request; got.RunID != res.RunID {
		t.Errorf("teach request run %q, want %q", got.RunID, res.RunID)
	}
	if got := reqs[0].Request; got.Step != "append_note" {
		t.Errorf("teach request step %q, want append_note", got.Step)
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
	if strings.Contains(string(shown), "ward before") {
		t.Errorf("attention list as the agent sees it carries the teach text: %s", shown)
	}
	if !strings.Contains(string(shown), `"teach_requests":1`) {
		t.Errorf("attention list as the agent sees it has no teach_requests count of 1: %s", shown)
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
