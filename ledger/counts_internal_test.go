package ledger

import (
	"context"
	"database/sql"
	"testing"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
)

// TestCountedRunsAreRememberedForTheNextSeal: the runs a session's count
// found (CheckCounts, before the first attempt) are not counted again by
// the next seal, which counts only the runs added since — on a host with
// a million runs, a count of them all inside the write lock. Seen here by
// a row removed behind the count, which the seal's count then does not
// see (that removal is CheckCounts' and the chain check's to find).
func TestCountedRunsAreRememberedForTheNextSeal(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil).Open()
	s := StoreOf(h)
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := s.InsertRun(ctx, store.Run{RunID: id, Deployment: "d", RequestID: id, State: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckCounts(ctx, h, &Heads{}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Write(ctx, "remove a run behind the count", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE run_id = 'r2'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRun(ctx, store.Run{RunID: "r4", Deployment: "d", RequestID: "r4", State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := s.db.Write(ctx, "count", func(tx *sql.Tx) error {
		var err error
		n, _, err = s.db.CountRuns(ctx, tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("the seal's count is %d: want the 3 counted at the session's start and the 1 added since", n)
	}
}
