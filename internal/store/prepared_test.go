package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// keptStatements is how many statements the reading pool's connection
// keeps prepared.
func keptStatements(t *testing.T, db *DB) int {
	t.Helper()
	conn, err := db.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	if err := conn.Raw(func(dc any) error {
		pc, ok := dc.(*preparingConn)
		if !ok {
			return fmt.Errorf("the connection is a %T", dc)
		}
		pc.mu.Lock()
		n = len(pc.stmts)
		pc.mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConnectionsKeepStatementsPrepared: a query run again is answered
// from its prepared statement with the new arguments; the same query
// inside the loop over its own open rows runs prepared afresh and reads
// right; SQL past the bound and SQL that does not prepare run (or fail)
// as they would unprepared, and are not kept.
func TestConnectionsKeepStatementsPrepared(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	db.db.SetMaxOpenConns(1) // one connection, so what it keeps is seen
	const square = `SELECT ? * ?`
	var got int
	for i := range 5 {
		if err := db.QueryRowContext(ctx, square, i, i).Scan(&got); err != nil || got != i*i {
			t.Fatalf("%d squared: %d, %v", i, got, err)
		}
	}
	before := keptStatements(t, db)
	if err := db.QueryRowContext(ctx, square, 7, 7).Scan(&got); err != nil || got != 49 {
		t.Fatalf("7 squared: %d, %v", got, err)
	}
	if after := keptStatements(t, db); after != before {
		t.Fatalf("a query run again was prepared again: %d statements kept, were %d", after, before)
	}

	// The same SQL inside the loop over its own rows (a transaction keeps
	// one connection, so both are on it).
	const upTo = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT i FROM n`
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.QueryContext(ctx, upTo, 3)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for outer.Next() {
		var i int
		if err := outer.Scan(&i); err != nil {
			t.Fatal(err)
		}
		inner := 0
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (`+upTo+`)`, i).Scan(&inner); err != nil || inner != i {
			t.Fatalf("inner count to %d: %d, %v", i, inner, err)
		}
		again, err := tx.QueryContext(ctx, upTo, 2) // the outer's own SQL, its rows open
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for again.Next() {
			n++
		}
		again.Close()
		if n != 2 {
			t.Fatalf("the same SQL inside its own loop read %d rows, want 2", n)
		}
		sum += i
	}
	if err := outer.Err(); err != nil || sum != 6 {
		t.Fatalf("the outer loop read a sum of %d, %v: want 6", sum, err)
	}
	outer.Close()
	tx.Rollback()

	if _, err := db.QueryContext(ctx, `SELEC nonsense`); err == nil {
		t.Fatal("SQL that does not parse ran")
	}
	for i := range maxPrepared + 10 {
		q := fmt.Sprintf(`SELECT %d + ?`, i)
		if err := db.QueryRowContext(ctx, q, 1).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("%s: %d, %v", q, got, err)
		}
	}
	if n := keptStatements(t, db); n != maxPrepared {
		t.Fatalf("%d statements kept, want the bound %d", n, maxPrepared)
	}
}

// TestReadersOutliveABurst: connections opened for reads made at once are
// kept for the next burst rather than closed (a connection opened again
// reads the schema and prepares its statements again).
func TestReadersOutliveABurst(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	const atOnce = idleReaders / 2
	burst := func() {
		t.Helper()
		// Each reader holds its rows open until all have started, so the
		// burst needs atOnce connections at the same time.
		var started, done sync.WaitGroup
		started.Add(atOnce)
		errs := make(chan error, atOnce)
		for range atOnce {
			done.Go(func() {
				rows, err := db.QueryContext(ctx, `SELECT 1`)
				started.Done()
				if err != nil {
					errs <- err
					return
				}
				started.Wait()
				rows.Close()
			})
		}
		done.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	burst()
	opened := db.db.Stats().OpenConnections
	if opened < atOnce {
		t.Fatalf("a burst of %d readers opened %d connections", atOnce, opened)
	}
	burst()
	if s := db.db.Stats(); s.MaxIdleClosed != 0 || s.OpenConnections != opened {
		t.Fatalf("after a second burst: %d connections closed as surplus idle, %d open (were %d)", s.MaxIdleClosed, s.OpenConnections, opened)
	}
}
