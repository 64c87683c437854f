package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// cubicGuard makes the clinic example's guard cubic in the summary's
// length, as issue 22 (D3) found admitted on a host.
func cubicGuard(t testing.TB) func(dir string) {
	return func(dir string) {
		path := filepath.Join(dir, "jobs.cue")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		old := `	record_is_open: {
		kind: "predicate"
		expr: "steps.load_record.status == \"open\""
	}`
		if !strings.Contains(string(b), old) {
			t.Fatal("the clinic example's guard changed: cannot make it cubic")
		}
		cubic := `	record_is_open: {
		kind: "predicate"
		imports: ["strings"]
		expr: "steps.load_record.status == \"open\" && len([for a in strings.Split(input.summary, \"\") for b in strings.Split(input.summary, \"\") for c in strings.Split(input.summary, \"\") {1}]) > 0"
	}`
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, cubic, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCostlyEvaluatorIsBounded (issue 22, D3): a run whose guard is cubic
// in a 2,000-character summary ends did_not_run/evaluation_over_budget at
// the host's evaluation budget (default 2 s) with nothing written, while a
// short run started behind it is done meanwhile; the same request_id
// replays that result and never starts another attempt; and a
// coordinator closing while such an evaluation runs ends it at once (as
// on stdin EOF or SIGTERM), the run read as interrupted before its effect.
func TestCostlyEvaluatorIsBounded(t *testing.T) {
	s := &served{Host: hosttest.New(t, cubicGuard(t))}
	s.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	s.host = s.Open()
	s.AddConnection(s.host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.host, "claude-test")
	s.c = s.open(t)
	long := json.RawMessage(fmt.Sprintf(`{"record_ref":"AB-1234","urgency":"soon","summary":%q}`, strings.Repeat("x", 2000)))
	short := json.RawMessage(`{"record_ref":"CD-5678","urgency":"soon","summary":"Short."}`)
	run := func(c *coordinator.Coordinator, id string, in json.RawMessage, wait time.Duration) *coordinator.Result {
		res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: id, Wait: wait})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var slow *coordinator.Result
	var wg sync.WaitGroup
	wg.Go(func() { slow = run(s.c, "costly", long, time.Minute) })
	quick := run(s.c, "short", short, time.Minute)
	if quick.Outcome != contract.OutcomeDone {
		t.Fatalf("the short run behind the costly one: %+v", quick)
	}
	wg.Wait()
	wantResult(t, "the costly run", slow, contract.OutcomeDidNotRun, contract.ReasonEvaluationOverBudget)
	if slow.SafeToRetry {
		t.Error("the costly run: safe to retry, want not")
	}
	if slow.ReceiptDigest == "" {
		t.Error("the costly run: no receipt digest")
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 0 {
		t.Fatalf("the costly run wrote %d notes", len(notes))
	}
	again := run(s.c, "costly", long, time.Minute)
	if !again.Replayed {
		t.Errorf("the same request again: not replayed: %+v", again)
	}
	if again.RunID != slow.RunID {
		t.Errorf("the same request again: run %q, want the first's %q", again.RunID, slow.RunID)
	}
	if again.Attempt != 1 {
		t.Errorf("the same request again: attempt %d, want 1", again.Attempt)
	}
	if again.Reason != contract.ReasonEvaluationOverBudget {
		t.Errorf("the same request again: reason %s, want %s", again.Reason, contract.ReasonEvaluationOverBudget)
	}

	// Closing mid-evaluation: Close returns (it waits for every run), and
	// the run is interrupted before its effect.
	res := run(s.c, "closing", long, 0)
	if res.Outcome != contract.OutcomeRunning {
		t.Fatalf("a costly run answered at once: %+v", res)
	}
	if err := s.c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := s.open(t)
	got, err := c2.GetRun(context.Background(), res.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, "a run whose evaluation the closing coordinator ended", got, contract.OutcomeDidNotRun, contract.ReasonInterruptedEarly)
}
