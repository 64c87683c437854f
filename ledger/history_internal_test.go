package ledger

// Tests of what must not grow with a host's history.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/hosttest"
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
	s := Open(h)
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := s.Tables().InsertRun(ctx, RunRow{RunID: id, Deployment: "d", RequestID: id, State: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CheckCounts(ctx, &Heads{}); err != nil {
		t.Fatal(err)
	}
	writeSQL(t, s, `DELETE FROM runs WHERE run_id = 'r2'`) // a run removed behind the count
	if err := s.Tables().InsertRun(ctx, RunRow{RunID: "r4", Deployment: "d", RequestID: "r4", State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := s.db.Write(ctx, "count", func(tx *sql.Tx) error {
		var err error
		n, _, err = s.db.CountRows(ctx, tx, "runs")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("the seal's count is %d: want the 3 counted at the session's start and the 1 added since", n)
	}
}

// writeSQL runs one statement in a write of s, as something other than
// the ledger would change the store.
func writeSQL(t *testing.T, s *Ledger, query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if err := s.db.Write(ctx, "test", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestEachReceiptRefusesBeforeHandingAny: receipts are handed over in
// chain order, one at a time; a row that is not a receipt record refuses
// receipt_chain_broken naming it, and then not one receipt was handed
// over, wherever in the chain the row is.
func TestEachReceiptRefusesBeforeHandingAny(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil).Open()
	s := Open(h)
	insert := func(seq int, record string) {
		t.Helper()
		writeSQL(t, s, `INSERT INTO receipts (seq, run_id, attempt, prev_digest, record, signature, deployment, request_id) VALUES (?, ?, 1, '', ?, x'00', 'd', ?)`,
			seq, fmt.Sprint("run-", seq), []byte(record), fmt.Sprint("req-", seq))
	}
	for seq := 1; seq <= 3; seq++ {
		insert(seq, fmt.Sprintf(`{"type":%q,"seq":%d,"runId":"run-%d"}`, ReceiptType, seq, seq))
	}
	var seen []int64
	if err := s.EachReceipt(ctx, func(r ListedReceipt) error { seen = append(seen, r.Record.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("receipts handed over: %v, want 1 2 3 in chain order", seen)
	}
	insert(4, `not a receipt`)
	handed := 0
	err := s.EachReceipt(ctx, func(ListedReceipt) error { handed++; return nil })
	var why *blocking.Error
	if !errors.As(err, &why) || why.Code != blocking.ReceiptChainBroken || why.Detail != "receipt #4 is not a receipt record" {
		t.Fatalf("a row that is not a receipt: %v", err)
	}
	if handed != 0 {
		t.Fatalf("%d receipts were handed over before the refusal", handed)
	}
}

// TestOpenAttentionItemsFollowTheirState: the open items are read through
// their index (INDEXED BY: the query fails without it), follow each
// item's state as it is paused and decided, and keep their order; every
// item is still read by AttentionItems.
func TestOpenAttentionItemsFollowTheirState(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil).Open()
	s := Open(h)
	for _, id := range []string{"a1", "a2", "a3"} {
		run := "run-" + id
		if err := s.Tables().InsertRun(ctx, RunRow{RunID: run, Deployment: "d", RequestID: run, State: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		item := fmt.Sprintf(`{"attention_id":%q,"run_id":%q,"state":"open"}`, id, run)
		if err := s.Tables().PauseRun(ctx, AttentionRow{ID: id, RunID: run, State: []byte(item)}, func(b []byte) ([]byte, error) { return b, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Tables().DecideAttention(ctx, "a2", func(item, run []byte) ([]byte, []byte, error) {
		return []byte(`{"attention_id":"a2","run_id":"run-a2","state":"approved"}`), run, nil
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(read func(context.Context) ([]AttentionRow, error)) string {
		t.Helper()
		items, err := read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range items {
			out = append(out, a.ID)
		}
		return fmt.Sprint(out)
	}
	if got := ids(s.Tables().OpenAttentionItems); got != "[a1 a3]" {
		t.Fatalf("open items: %s, want a1 a3", got)
	}
	if got := ids(s.Tables().AttentionItems); got != "[a1 a2 a3]" {
		t.Fatalf("every item: %s", got)
	}
}
