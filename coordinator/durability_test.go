package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestHelperCoordinator is not a test: it is the child process of the
// durability tests, a coordinator that runs one request and then waits to
// be killed.
func TestHelperCoordinator(t *testing.T) {
	home := os.Getenv("OA_TEST_COORDINATOR_HOME")
	if home == "" {
		t.Skip("only runs as the child of a durability test")
	}
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: home, Deployment: "clinic", EffectTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs(os.Getenv("OA_TEST_RECORD")), RequestID: "durable", Wait: time.Hour})
	t.Fatalf("the child's run returned (%v); it should have been killed", err)
}

// killedMidRun starts a child coordinator on the served host's home, waits
// until its run reaches state (as stored), and kills it with SIGKILL.
func killedMidRun(t *testing.T, s *served, record string, reached func(run map[string]any) bool) {
	t.Helper()
	s.c.Close() // the child serves alone
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperCoordinator$")
	cmd.Env = append(os.Environ(), "OA_TEST_COORDINATOR_HOME="+s.Home, "OA_TEST_RECORD="+record)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), s.Home+"/state.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		states, err := runStatesOf(context.Background(), db, "clinic")
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(states, func(state []byte) bool { return requestOf(state) == "durable" }); i >= 0 {
			var run map[string]any
			if json.Unmarshal(states[i], &run) == nil && reached(run) {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never reached the state")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// TestKilledDuringEffect: the coordinator dies while an effect is in
// flight. The run reads as interrupted (not_sure_if_saved), the note the
// app saved is there once, and asking again never sends it again.
func TestKilledDuringEffect(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	// Killed once the app has saved the note and the coordinator still
	// waits for its answer: the effect happened, unconfirmed.
	killedMidRun(t, s, "TO-0042", func(run map[string]any) bool {
		notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "TO-0042")
		return run["in_flight"] == "append_note" && len(notes) == 1
	})
	c := s.open(t)
	got, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs("TO-0042"), RequestID: "durable", Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, "after the kill", got, contract.OutcomeNotSureIfSaved, contract.ReasonInterrupted)
	if got.SafeToRetry {
		t.Error("after the kill: safe to retry, want not")
	}
	if got.Proof != contract.ProofSealed {
		t.Errorf("after the kill: proof %s, want %s", got.Proof, contract.ProofSealed)
	}
	again, _ := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs("TO-0042"), RequestID: "durable", Wait: 10 * time.Second})
	if !again.Replayed {
		t.Errorf("asked again: not replayed: %+v", again)
	}
	if again.Reason != contract.ReasonInterrupted {
		t.Errorf("asked again: reason %s, want %s", again.Reason, contract.ReasonInterrupted)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "TO-0042"); len(notes) != 1 {
		t.Fatalf("%d notes, want the one the app saved before the kill", len(notes))
	}
	report, _ := ledger.Open(s.host).VerifyReceipts(context.Background())
	if !report.OK {
		t.Errorf("receipts do not verify: %+v", report)
	}
	if report.Receipts != 1 {
		t.Errorf("%d receipts, want 1", report.Receipts)
	}
}

// TestKilledWhilePaused: the coordinator dies while a run waits for a
// person. Nothing is lost: the person approves from the CLI side, a new
// coordinator resumes the run and the note is written exactly once.
func TestKilledWhilePaused(t *testing.T) {
	s := serve(t, approvalRegistry())
	killedMidRun(t, s, "AB-1234", func(run map[string]any) bool { return run["status"] == "paused" })
	items, err := coordinator.AttentionRecords(s.host).List(context.Background(), false)
	if err != nil {
		t.Fatalf("attention after the kill: %v", err)
	}
	if len(items) != 1 {
		t.Fatalf("attention after the kill: %d items, want 1: %+v", len(items), items)
	}
	if _, err := coordinator.DecideAttention(context.Background(), s.host, attention.Decision{AttentionID: items[0].ID, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	c := s.open(t)
	got, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs("AB-1234"), RequestID: "durable", Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("resumed after the kill: %v", err)
	}
	if got.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed after the kill: outcome %s (reason %s), want %s", got.Outcome, got.Reason, contract.OutcomeDone)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("%d notes, want 1", len(notes))
	}
}

// requestOf is the request id a run's state document names ("" when it
// does not decode): what the run's request_id column holds beside it.
func requestOf(state []byte) string {
	var run struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(state, &run)
	return run.RequestID
}

// runStatesOf reads the state document of every run of deployment
// straight from the database file, as a process beside the coordinator
// sees them: the tests watch a run from outside the process writing it.
func runStatesOf(ctx context.Context, db *store.DB, deployment string) ([][]byte, error) {
	return store.Select(ctx, db, func(r store.Row, state *[]byte) error {
		if err := r.Scan(state); err != nil {
			return err
		}
		*state = store.Unpack(*state)
		return nil
	}, `SELECT state FROM runs WHERE deployment = ? ORDER BY rowid`, deployment)
}
