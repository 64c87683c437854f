package ledger

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/store"
)

func TestRunsAttentionReceiptsAndStates(t *testing.T) {
	ctx := context.Background()
	sdb, err := store.Open(ctx, filepath.Join(t.TempDir(), "oa.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	db := &Ledger{db: sdb}
	if err := db.Tables().InsertRun(ctx, RunRow{RunID: "r1", Deployment: "d", RequestID: "q", State: []byte(`{"n":0}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Tables().InsertRun(ctx, RunRow{RunID: "r2", Deployment: "d", RequestID: "q", State: []byte(`{}`)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second run for one request id: %v", err)
	}
	if err := db.Tables().UpdateRun(ctx, "r1", func(b []byte) ([]byte, error) { return append(b[:len(b)-2], []byte("1}")...), nil }); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Tables().RunByRequest(ctx, "d", "q"); err != nil || string(r.State) != `{"n":1}` {
		t.Fatalf("run = %+v, %v", r, err)
	}
	if r, err := db.Tables().RunByID(ctx, "nope"); r != nil || err != nil {
		t.Fatalf("missing run = %+v, %v", r, err)
	}
	if err := db.Tables().PauseRun(ctx, AttentionRow{ID: "a1", RunID: "r1", State: []byte(`{"s":"open"}`)}, func(b []byte) ([]byte, error) { return []byte(`{"n":2}`), nil }); err != nil {
		t.Fatal(err)
	}
	if items, err := db.Tables().AttentionItems(ctx); err != nil || len(items) != 1 {
		t.Fatalf("items = %v, %v", items, err)
	}
	if err := db.Tables().DecideAttention(ctx, "a1", func(item, run []byte) ([]byte, []byte, error) {
		if string(item) != `{"s":"open"}` || string(run) != `{"n":2}` {
			return nil, nil, fmt.Errorf("decide saw %s and %s", item, run)
		}
		return []byte(`{"s":"approved"}`), []byte(`{"n":3}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if a, _ := db.Tables().AttentionByID(ctx, "a1"); string(a.State) != `{"s":"approved"}` {
		t.Fatalf("item after decide: %s", a.State)
	}
	seal := func(attempt int) (*ReceiptRow, error) {
		r, cp, err := db.Tables().seal(ctx, "r1", func([]byte) (int, error) { return attempt, nil }, func(seq int64, prev *ReceiptRow) ([]byte, []byte, string, error) {
			p := ""
			if prev != nil {
				p = fmt.Sprint(prev.Seq)
			}
			return []byte(fmt.Sprint(seq)), []byte("s"), p, nil
		}, func(record []byte) ([]byte, error) { return []byte(`{"sealed":` + string(record) + `}`), nil },
			func(r *ReceiptRow, runs int64, prev *store.Version) ([]byte, []byte, error) {
				if (prev == nil) != (r.Seq == 1) || prev != nil && prev.Seq != r.Seq-1 || runs != 1 {
					return nil, nil, fmt.Errorf("checkpoint of #%d saw runs %d, previous %+v", r.Seq, runs, prev)
				}
				return []byte(fmt.Sprintf(`{"head":%d}`, r.Seq)), []byte("c"), nil
			}, nil)
		if (r == nil) != (cp == nil) || cp != nil && cp.Seq != r.Seq {
			t.Fatalf("receipt %+v with checkpoint %+v", r, cp)
		}
		return r, err
	}
	for i := range 3 {
		r, err := seal(i + 1)
		if err != nil || r.Seq != int64(i+1) {
			t.Fatalf("receipt %d = %+v, %v", i, r, err)
		}
	}
	if r, err := seal(2); r != nil || err != nil {
		t.Fatalf("an attempt sealed twice: %+v, %v", r, err)
	}
	if rs, _ := store.Select(ctx, sdb, scanReceipt, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`); len(rs) != 3 || rs[2].PrevDigest != "2" || rs[2].Attempt != 3 {
		t.Fatalf("chain = %+v", rs)
	}
	if v, _ := sdb.Versions().Latest(ctx, store.KindCheckpoint, store.CheckpointKey); v == nil || v.Seq != 3 || string(v.Record) != `{"head":3}` {
		t.Fatalf("checkpoint after sealing: %+v", v)
	}
	if r, _ := db.Tables().RunByID(ctx, "r1"); string(r.State) != `{"sealed":3}` {
		t.Fatalf("run after sealing: %s", r.State)
	}
	if _, err := sdb.ExecContext(ctx, `DELETE FROM receipts`); err == nil {
		t.Fatal("receipts deleted")
	}
	now := time.Now()
	if err := db.Tables().UseState(ctx, "n1", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := db.Tables().UseState(ctx, "n1", now.Add(time.Minute), now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("replayed state: %v", err)
	}
}
