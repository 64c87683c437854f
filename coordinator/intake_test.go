package coordinator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestWritesWaitForTheIntake: a new run's first steps start while it
// is taken in (intake.go), held back here until its first write (the
// effect's in-flight mark) comes before the intake is decided. Taken in,
// the write waits for its row and the run ends done; refused by the store
// check, its caller gets the refusal, nothing of the run is written or
// sent (no row, no note), and the operator is told the refusal and
// nothing else — no fault of a write the refused run tried.
func TestWritesWaitForTheIntake(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	s.c.HoldIntake(300 * time.Millisecond)
	wantResult(t, "a run taken in after its first steps", s.run(t, "admitted", "AB-1234"), contract.OutcomeDone, contract.ReasonVerified)
	s.c.Close()
	var operator servetest.Buffer
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: s.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.HoldIntake(300 * time.Millisecond)
	if err := c.WaitCounted(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := coordtest.RawDB(t, s.Home)
	coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = (SELECT max(seq) FROM receipts)`)
	res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs("EF-0001"), RequestID: "refused", Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, "a run refused at its intake", res, contract.OutcomeDidNotRun, contract.ReasonHostRecordsDisagree)
	if res.RunID != "" {
		t.Errorf("a run refused at its intake: run %q, want none", res.RunID)
	}
	if n := coordtest.Notes(t, s.Home, "EF-0001"); n != 0 {
		t.Fatalf("the refused run's effect was made: %d notes", n)
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM runs WHERE request_id = 'refused'`).Scan(&rows); err != nil {
		t.Fatalf("counting the refused run's rows: %v", err)
	}
	if rows != 0 {
		t.Fatalf("the refused run was stored: %d rows, want none", rows)
	}
	out := operator.String()
	if !strings.Contains(out, "disagree with its signed head") {
		t.Errorf("the operator was not told the records disagree with its signed head:\n%s", out)
	}
	for _, wrong := range []string{"not admitted", "intake", "were not written", ": run run_"} {
		if strings.Contains(out, wrong) {
			t.Errorf("the operator was told %q:\n%s", wrong, out)
		}
	}
}
