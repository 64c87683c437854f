package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// noteCountsEarlier edits clinic-triage so that the note the effect
// writes names how many notes the record held when it was read: the
// arguments the step sends change when the record changes between the
// approval and the resume. The read-back accepts the note by its prefix.
func noteCountsEarlier(t *testing.T) func(dir string) {
	return func(dir string) {
		p := filepath.Join(dir, "jobs.cue")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		out := strings.Replace(src, `text:   "[triage:\\(input.urgency)] " + strings.TrimSpace(input.summary)`,
			`text:   "[triage:\\(input.urgency)] " + strings.TrimSpace(input.summary) + " (\\(len(steps.load_record.notes)) earlier)"`, 1)
		out = strings.Replace(out, `if n.text == "[triage:\\(input.urgency)] " + strings.TrimSpace(input.summary) {n}`,
			`if strings.HasPrefix(n.text, "[triage:\\(input.urgency)] " + strings.TrimSpace(input.summary)) {n}`, 1)
		if strings.Count(out, "earlier") != 1 {
			t.Fatal("jobs.cue has no triage_note to edit")
		}
		if !strings.Contains(out, "HasPrefix") {
			t.Fatal("jobs.cue has no note_on_record to edit")
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// proposedText is the note text the item's proposed call would write.
func proposedText(t *testing.T, s *served, id string) (text, digest string) {
	t.Helper()
	shown, err := coordinator.AttentionRecords(s.host).Show(context.Background(), id)
	if err != nil {
		t.Fatalf("show %s: %v", id, err)
	}
	if shown.Proposed == nil {
		t.Fatalf("show %s: no proposed call: %+v", id, shown)
	}
	var args struct{ Text string }
	if err := json.Unmarshal(shown.Proposed.Call.Arguments, &args); err != nil {
		t.Fatal(err)
	}
	return args.Text, shown.CallDigest
}

// TestApprovalHoldsForTheCallApproved: a person approves the note a
// paused run would write; before its caller resumes it, the record
// changes (another run adds a note), so the re-read makes the step send
// another note. The approval does not carry over: the run pauses again
// on a new item showing the new note, nothing is written, and only the
// approval of that item lets it write.
func TestApprovalHoldsForTheCallApproved(t *testing.T) {
	ctx := context.Background()
	s := &served{Host: hosttest.New(t, noteCountsEarlier(t))}
	s.WriteRegistry(servetest.ApprovalRegistry())
	s.host = s.Open()
	s.AddConnection(s.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.host, "claude-test")
	s.c = s.open(t)
	approve := func(id string) {
		t.Helper()
		if _, err := coordinator.DecideAttention(ctx, s.host, attention.Decision{AttentionID: id, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	notes := func() int {
		n, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234")
		return len(n)
	}

	first := s.run(t, "first", "AB-1234")
	if first.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("first run: %+v", first)
	}
	text, approvedDigest := proposedText(t, s, first.AttentionID)
	if text != "[triage:soon] Persistent cough, three days. (0 earlier)" {
		t.Fatalf("the first item proposes %q", text)
	}
	approve(first.AttentionID)

	// Another run writes a note on the same record meanwhile.
	other := s.run(t, "other", "AB-1234")
	approve(other.AttentionID)
	if res := s.run(t, "other", "AB-1234"); res.Outcome != contract.OutcomeDone {
		t.Fatalf("the other run: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDone)
	}
	if n := notes(); n != 1 {
		t.Fatalf("after the other run: %d notes, want 1", n)
	}

	again := s.run(t, "first", "AB-1234")
	wantResult(t, "resumed after the record changed", again, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)
	if again.AttentionID == "" {
		t.Fatal("resumed after the record changed: no attention id, want a new item")
	}
	if again.AttentionID == first.AttentionID {
		t.Fatalf("resumed after the record changed: the first item %s again, want a new item", first.AttentionID)
	}
	if notes() != 1 {
		t.Fatalf("%d notes: the approved note was written for another call", notes())
	}
	text, digest := proposedText(t, s, again.AttentionID)
	if want := "[triage:soon] Persistent cough, three days. (1 earlier)"; text != want {
		t.Fatalf("the new item proposes %q, want %q", text, want)
	}
	if digest == approvedDigest {
		t.Fatalf("the new item's call digest %s is the approved one", digest)
	}
	if old, _ := s.c.AttentionItem(ctx, first.AttentionID); old.State != attention.Approved {
		t.Fatalf("the first item: %+v", old)
	}
	approve(again.AttentionID)
	if done := s.run(t, "first", "AB-1234"); done.Outcome != contract.OutcomeDone {
		t.Fatalf("after approving the new call: outcome %s (reason %s), want %s", done.Outcome, done.Reason, contract.OutcomeDone)
	}
	if n := notes(); n != 2 {
		t.Fatalf("after approving the new call: %d notes, want 2", n)
	}
	got, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234")
	if len(got) != 2 {
		t.Fatalf("%d notes written, want the other run's, then the call approved second: %+v", len(got), got)
	}
	if want := "[triage:soon] Persistent cough, three days. (1 earlier)"; got[1].Text != want {
		t.Fatalf("second note %q, want the call approved second %q", got[1].Text, want)
	}
}

// TestProposedChangeOfThisDeployment: the engine opens an item's proposed
// change for the person deciding at the client; a forged sealed change
// (another item's, under this item's digest) does not open.
func TestProposedChangeOfThisDeployment(t *testing.T) {
	ctx := context.Background()
	s := serve(t, servetest.ApprovalRegistry())
	a, b := s.run(t, "a", "AB-1234"), s.run(t, "b", "CD-5678")
	p, err := s.c.ProposedChange(ctx, a.AttentionID)
	if err != nil {
		t.Fatalf("proposed change: %v", err)
	}
	if p == nil {
		t.Fatal("no proposed change")
	}
	if p.Call.Tool != "append_note" {
		t.Errorf("proposed change calls %q, want append_note", p.Call.Tool)
	}
	if !strings.Contains(string(p.Call.Arguments), "AB-1234") {
		t.Errorf("proposed change's arguments %s, want AB-1234 in them", p.Call.Arguments)
	}
	if p.Step != "append_note" {
		t.Errorf("proposed change at step %q, want append_note", p.Step)
	}
	secret, err := os.ReadFile(filepath.Join(s.Home, ledger.SecretFile))
	if err != nil {
		t.Fatal(err)
	}
	recs := coordinator.AttentionRecords(s.host)
	sa, _ := recs.LoadOne(ctx, a.AttentionID)
	sb, _ := recs.LoadOne(ctx, b.AttentionID)
	sa.Sealed = sb.Sealed
	if _, err := sa.Proposed(secret); !blocking.Has(err, blocking.ProposedChangeUnreadable) {
		t.Fatalf("another item's sealed change opened: %v", err)
	}
	if _, err := sb.Proposed(append([]byte{secret[0] ^ 1}, secret[1:]...)); !blocking.Has(err, blocking.ProposedChangeUnreadable) {
		t.Fatalf("a sealed change opened with another secret")
	}
}
