package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestCountRowsCountsOnlyWhatCameSince: CountRows gives the table's
// size as COUNT(*) does — the first time, after rows other handles (other
// processes) added, and never counting rows a rolled-back write took
// back — while reading only the rows after the count it remembered.
func TestCountRowsCountsOnlyWhatCameSince(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db, other := openTest(t, path), openTest(t, path)
	next := 0
	insert := func(d *DB, n int) {
		t.Helper()
		if err := d.Write(ctx, "insert", func(tx *sql.Tx) error {
			for range n {
				next++
				if _, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, 'd', ?, x'00')`, fmt.Sprint("run-", next), fmt.Sprint("req-", next)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(keep bool) int64 {
		t.Helper()
		var n, want int64
		err := db.Write(ctx, "count", func(tx *sql.Tx) error {
			var remember func()
			var err error
			if n, remember, err = db.CountRows(ctx, tx, "runs"); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&want); err != nil {
				return err
			}
			if !keep {
				return errRolledBack
			}
			defer remember() // as the ledger does: once the write is kept
			return nil
		})
		if err != nil && !errors.Is(err, errRolledBack) {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("CountRows = %d, COUNT(*) = %d", n, want)
		}
		return n
	}
	if n := count(true); n != 0 {
		t.Fatalf("empty table: %d", n)
	}
	insert(db, 3)
	count(true)
	insert(other, 2) // another process's rows
	if n := count(true); n != 5 {
		t.Fatalf("after another handle's rows: %d, want 5", n)
	}
	// A write that inserted rows and was rolled back: its count (which
	// saw them) is not the one kept.
	err := db.Write(ctx, "insert and count, then fail", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES ('gone', 'd', 'gone', x'00')`); err != nil {
			return err
		}
		n, remember, err := db.CountRows(ctx, tx, "runs")
		if err != nil || n != 6 {
			return fmt.Errorf("inside the write: %d, %v", n, err)
		}
		_ = remember // never called: the write fails
		return errRolledBack
	})
	if !errors.Is(err, errRolledBack) {
		t.Fatal(err)
	}
	if n := count(true); n != 5 {
		t.Fatalf("after a rolled-back insert: %d, want 5", n)
	}
	insert(db, 1)
	if n := count(false); n != 6 {
		t.Fatalf("after one more row: %d, want 6", n)
	}
	insert(db, 1)
	if n := count(true); n != 7 {
		t.Fatalf("after a count that was rolled back and one more row: %d, want 7", n)
	}
}

var errRolledBack = errors.New("rolled back on purpose")

// TestRememberedRunsAreCountedFrom: a count remembered from a snapshot
// (RememberRows) is where CountRows starts: only the rows after its mark
// are read — seen here by remembering one row too many — and an older
// snapshot's count does not replace a newer one.
func TestRememberedRunsAreCountedFrom(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	insert := func(ids ...string) {
		t.Helper()
		if err := db.Write(ctx, "insert", func(tx *sql.Tx) error {
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, 'd', ?, x'00')`, id, id); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	counted := func() int64 {
		t.Helper()
		var n int64
		if err := db.Write(ctx, "count", func(tx *sql.Tx) error {
			var err error
			n, _, err = db.CountRows(ctx, tx, "runs")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert("a", "b")
	var mark int64
	if err := db.QueryRowContext(ctx, `SELECT max(rowid) FROM runs`).Scan(&mark); err != nil {
		t.Fatal(err)
	}
	db.RememberRows("runs", 3, mark) // one more than the two rows up to mark
	db.RememberRows("runs", 1, mark-1)
	insert("c")
	if n := counted(); n != 4 {
		t.Fatalf("CountRows = %d, want the 3 remembered up to the mark and 1 after it", n)
	}
}
