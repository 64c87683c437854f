package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// testRun stands for the coordinator's state type, which is the run
// record in a type of its own.
type testRun ledger.RunRecord

// stamped is the time the writer's Stamp gives every write.
var stamped = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// writerOn is a run writer over a fresh host's ledger with one running
// run, runID, stored; ready is the writer's Ready.
func writerOn(t *testing.T, ready func(string) error) (*ledger.Ledger, *ledger.RunWriter[testRun]) {
	t.Helper()
	l := ledger.Open(hosttest.New(t, nil).Open())
	key, err := l.Secret()
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewRunWriter(l, ledger.RunStates[testRun]{
		Decode: func(b []byte) (*testRun, error) {
			r, err := ledger.DecodeRun(key, b)
			return (*testRun)(r), err
		},
		Encode:   func(r *testRun) ([]byte, error) { return (*ledger.RunRecord)(r).Encode(key) },
		OfRecord: func(r *ledger.RunRecord) *testRun { return (*testRun)(r) },
		Stamp:    func(r *testRun) { r.UpdatedAt = stamped },
		Ready:    ready,
	})
	r := ledger.RunRecord{RunID: runID, Deployment: "clinic", RequestID: "req-1", Workflow: "job", Attempt: 1, Status: ledger.RunRunning,
		Outcome: contract.OutcomeRunning, Completed: []string{}, Approved: []string{}, Evidence: []string{}, Digests: map[string]string{}}
	b, err := r.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Tables().InsertRun(context.Background(), ledger.RunRow{RunID: runID, Deployment: r.Deployment, RequestID: r.RequestID, State: b}); err != nil {
		t.Fatal(err)
	}
	return l, w
}

const runID = "run_1"

// evidence is an owed change: evidence e, once (a change must be
// idempotent: two writes may carry it).
func evidence(e string) func(*testRun) {
	return func(r *testRun) {
		if !slices.Contains(r.Evidence, e) {
			r.Evidence = append(r.Evidence, e)
		}
	}
}

// stored is run runID as stored.
func stored(t *testing.T, l *ledger.Ledger) *ledger.RunRecord {
	t.Helper()
	r, err := l.ReadRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunWriterCarriesOwedChanges: what a run owes rides on its next
// write, applied in the order it was owed and before the write's own
// move; a write that fails (its move refuses, or Ready does) writes
// nothing and keeps it owed; a committed write forgets only what it
// carried, not a change owed while it was under way.
func TestRunWriterCarriesOwedChanges(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("refused")
	var notReady error
	l, w := writerOn(t, func(string) error { return notReady })
	w.Owe(runID, evidence("a"))
	w.Owe(runID, evidence("b"))
	var seen []string
	err := w.Update(ctx, runID, func(r *testRun) error {
		seen = slices.Clone(r.Evidence)
		return refused
	})
	if !errors.Is(err, refused) || !slices.Equal(seen, []string{"a", "b"}) {
		t.Fatalf("the move saw %v (%v), want what was owed, in order, before it", seen, err)
	}
	if got := stored(t, l); len(got.Evidence) != 0 || !w.Owes(runID) {
		t.Fatalf("a refused write wrote %v or forgot what was owed (owes %v)", got.Evidence, w.Owes(runID))
	}
	notReady = refused
	if err := w.Update(ctx, runID, func(*testRun) error { t.Fatal("moved a run that was not ready"); return nil }); !errors.Is(err, refused) || !w.Owes(runID) {
		t.Fatalf("a write Ready refused: %v, owes %v", err, w.Owes(runID))
	}
	notReady = nil
	err = w.Update(ctx, runID, func(r *testRun) error {
		w.Owe(runID, evidence("late")) // owed after this write took what it carries
		r.InFlight = "step"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, l)
	if !slices.Equal(got.Evidence, []string{"a", "b"}) || got.InFlight != "step" || !got.UpdatedAt.Equal(stamped) {
		t.Fatalf("stored %+v, want the owed evidence, the move and the stamp", got)
	}
	if !w.Owes(runID) {
		t.Fatal("a change owed during a write was forgotten with what the write carried")
	}
	if err := w.Update(ctx, runID, func(*testRun) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, l); !slices.Equal(got.Evidence, []string{"a", "b", "late"}) || w.Owes(runID) {
		t.Fatalf("stored %v, owes %v: the late change was not carried by the next write", got.Evidence, w.Owes(runID))
	}
}

// TestRunWriterPauseAndFinishCarryOwedChanges: a pause (with its
// attention item) and the run's end (with its receipt) are writes of the
// run like any other, and carry what it owes.
func TestRunWriterPauseAndFinishCarryOwedChanges(t *testing.T) {
	ctx := context.Background()
	l, w := writerOn(t, nil)
	w.Owe(runID, evidence("before-pause"))
	item, _ := json.Marshal(map[string]string{"id": "att_1"})
	err := w.Pause(ctx, ledger.AttentionRow{ID: "att_1", RunID: runID, State: item}, func(r *testRun) error {
		r.Status, r.AttentionID = ledger.RunPaused, "att_1"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := stored(t, l); got.Status != ledger.RunPaused || !slices.Equal(got.Evidence, []string{"before-pause"}) || w.Owes(runID) {
		t.Fatalf("paused run stored %+v, owes %v", got, w.Owes(runID))
	}
	if a, err := l.Tables().AttentionByID(ctx, "att_1"); err != nil || a == nil {
		t.Fatalf("the pause's attention item was not stored: %v", err)
	}
	w.Owe(runID, evidence("before-end"))
	sealed, err := w.Finish(ctx, runID, stamped, func(r *testRun) error {
		r.Status, r.Outcome, r.Reason = ledger.RunTerminal, contract.OutcomeDone, contract.ReasonVerified
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sealed.Receipt == "" || !slices.Equal(sealed.Evidence, []string{"before-pause", "before-end"}) || w.Owes(runID) {
		t.Fatalf("finished run sealed %+v, owes %v", sealed, w.Owes(runID))
	}
	if got := stored(t, l); got.Receipt != sealed.Receipt || !slices.Equal(got.Evidence, sealed.Evidence) {
		t.Fatalf("stored %+v, sealed %+v", got, sealed)
	}
}

// TestRunWriterPaysWhatIsLeft: at the end of a run's execution Pay
// writes what it still owes, and forgets it even when that write is
// refused (the run no longer executes here); owing nothing, it writes
// nothing.
func TestRunWriterPaysWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	l, w := writerOn(t, nil)
	if err := w.Pay(ctx, runID, func(*testRun) error { t.Fatal("paid a run that owed nothing"); return nil }); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("not executing here")
	w.Owe(runID, evidence("refused"))
	if err := w.Pay(ctx, runID, func(*testRun) error { return refused }); !errors.Is(err, refused) || w.Owes(runID) {
		t.Fatalf("a refused payment: %v, owes %v (want forgotten)", err, w.Owes(runID))
	}
	w.Owe(runID, evidence("paid"))
	if err := w.Pay(ctx, runID, func(*testRun) error { return nil }); err != nil || w.Owes(runID) {
		t.Fatalf("a payment: %v, owes %v", err, w.Owes(runID))
	}
	if got := stored(t, l); !slices.Equal(got.Evidence, []string{"paid"}) {
		t.Fatalf("stored %v, want only what was paid", got.Evidence)
	}
}
