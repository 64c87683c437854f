package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/store/storetest"
)

// TestLedgerOfMainDatabase: the ledger's typed store reads the
// runs, attention items, receipts and used request states a database
// written by main's code (before the tables moved here) holds, and the
// receipt chain and its checkpoints go on from there (see
// internal/store/storetest/testdata/README.md).
func TestLedgerOfMainDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.MainDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Ledger{db: db}
	if r, err := s.Tables().RunByRequest(ctx, "clinic", "req-1"); err != nil || r == nil || r.RunID != "run-1" || string(r.State) != `{"status":"terminal"}` {
		t.Fatalf("run = %+v, %v", r, err)
	}
	if a, err := s.Tables().AttentionByID(ctx, "att-1"); err != nil || a == nil || string(a.State) != `{"state":"open"}` {
		t.Fatalf("attention = %+v, %v", a, err)
	}
	if r, err := s.Tables().LastReceiptOf(ctx, "run-1"); err != nil || r == nil || r.Seq != 1 || string(r.Record) != `{"receipt":1}` {
		t.Fatalf("receipt = %+v, %v", r, err)
	}
	if err := s.Tables().UseState(ctx, "nonce-1", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("main's used state reused: %v", err)
	}
	if err := s.Tables().InsertRun(ctx, RunRow{RunID: "run-2", Deployment: "clinic", RequestID: "req-2", State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	r, cp, err := s.Tables().seal(ctx, "run-2", func([]byte) (int, error) { return 1, nil }, func(seq int64, prev *ReceiptRow) ([]byte, []byte, string, error) {
		if prev == nil || prev.Seq != 1 {
			t.Errorf("previous receipt = %+v", prev)
		}
		return []byte(`{"receipt":2}`), []byte("sig"), "prev", nil
	}, func(record []byte) ([]byte, error) { return []byte(`{}`), nil },
		func(r *ReceiptRow, runs int64, prev *store.Version) ([]byte, []byte, error) {
			if prev == nil || string(prev.Record) != `{"checkpoint":1}` || runs != 2 {
				t.Errorf("checkpoint saw runs %d, previous %+v", runs, prev)
			}
			return []byte(`{"checkpoint":2}`), []byte("sig"), nil
		}, nil)
	if err != nil || r == nil || r.Seq != 2 || cp == nil || cp.Seq != 2 {
		t.Fatalf("sealing after main's receipt: %+v, %+v, %v", r, cp, err)
	}
}
