package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWriteWaitsOutABusyDatabase: a write lock held by another connection
// (another process on the same file) for longer than SQLite's busy
// handler waits is waited out by Write and ExecContext for as long as
// their context lasts, never returned as SQLITE_BUSY (issue 22, D9: two
// coordinators on one host answered internal_error "database is locked").
// Only the context ending ends the wait, with the context's error.
func TestWriteWaitsOutABusyDatabase(t *testing.T) {
	saved := busyHandlerWait
	busyHandlerWait = 20 * time.Millisecond
	defer func() { busyHandlerWait = saved }()
	path := filepath.Join(t.TempDir(), "state.db")
	holder, waiter := openTest(t, path), openTest(t, path)
	ctx := context.Background()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (v INTEGER) STRICT`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The holder keeps the lock through many of the waiter's busy
	// handler waits; the waiters' writes start meanwhile.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		errs[0] = waiter.Write(ctx, "test write", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`)
			return err
		})
	})
	wg.Go(func() { _, errs[1] = waiter.ExecContext(ctx, `INSERT INTO t VALUES (2)`) })
	time.Sleep(10 * busyHandlerWait)
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	var n int
	if err := waiter.QueryRowContext(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows (%v), want 3", n, err)
	}

	// A context that ends while the lock is held ends the wait with its
	// error, having written nothing.
	tx, err = holder.BeginWrite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	short, cancel := context.WithTimeout(ctx, 5*busyHandlerWait)
	defer cancel()
	if _, err := waiter.ExecContext(short, `INSERT INTO t VALUES (9)`); err == nil || short.Err() == nil {
		t.Fatalf("a write under a held lock returned %v before its context ended", err)
	}
}

// TestGroupCommitKeepsEachWriteAlone: two hundred concurrent writes, every
// third failing after its insert, share commits; each kept write is kept
// exactly once, no failed write leaves anything, and a write that breaks a
// constraint fails alone.
func TestGroupCommitKeepsEachWriteAlone(t *testing.T) {
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER PRIMARY KEY) STRICT`); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.Write(ctx, "test write", func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?)`, i); err != nil {
					return err
				}
				if i%3 == 0 {
					return errFailed
				}
				if i%50 == 1 {
					_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?)`, i) // taken: fails alone
					return err
				}
				return nil
			})
		})
	}
	wg.Wait()
	rows, err := Select(ctx, db, func(r Row, v *int) error { return r.Scan(v) }, `SELECT v FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int]bool{}
	for _, v := range rows {
		kept[v] = true
	}
	for i := range n {
		wantKept := i%3 != 0 && i%50 != 1
		if kept[i] != wantKept || (errs[i] == nil) != wantKept {
			t.Fatalf("write %d: kept %v, error %v; want kept %v", i, kept[i], errs[i], wantKept)
		}
	}
}

var errFailed = errors.New("failed on purpose")
