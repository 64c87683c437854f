package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrConflict is returned when an insert finds its key taken.
var ErrConflict = errors.New("store: key already exists")

// The handle API below is what the stages' own typed stores are built on
// (admit's admissions and revocations, the coordinator's runs, attention
// items, receipts and used request states): each owner writes its own
// SQL against its own tables, and every other stage goes through that
// owner's typed API.

// Write runs fn in a write transaction, taking the write lock up front
// (BEGIN IMMEDIATE), and keeps what fn did when it returns nil; otherwise
// nothing fn did is kept. fn runs under the write lock, so it should be
// quick, and it must not write through db itself. op names the write in
// the error of a failed begin or commit ("insert admission", "seal run"),
// as fn's own errors name theirs.
//
// Writes are group-committed: the writes of this process that arrive
// while a transaction is being written are run together in the next one,
// each inside a savepoint of its own (rolled back alone when its fn fails),
// and committed at once, so concurrent runs share one commit (one fsync)
// instead of waiting for one each. Each fn sees every write committed or
// batched before it. A failed begin or commit fails every write of its
// batch.
//
// A database busy in another process is waited for (see [DB.BeginWrite]),
// never returned as an error while ctx lasts.
func (db *DB) Write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	w := &queuedWrite{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)}
	db.writes.Add(w)
	return <-w.done
}

// queuedWrite is a Write waiting for its batch.
type queuedWrite struct {
	ctx  context.Context
	op   string
	fn   func(tx *sql.Tx) error
	done chan error
}

// maxBatch bounds the writes of one group commit.
const maxBatch = 64

// commitBatch runs a batch of writes in one transaction. The transaction
// waits for the write lock as long as any of its writes' contexts lasts.
func (db *DB) commitBatch(batch []*queuedWrite) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, w := range batch {
		stop := context.AfterFunc(w.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	tx, err := db.BeginWrite(ctx)
	if err != nil {
		for _, w := range batch {
			w.done <- fmt.Errorf("store: %s: begin: %w", w.op, firstErr(w.ctx.Err(), err))
		}
		return
	}
	defer tx.Rollback()
	results := make([]error, len(batch))
	kept := 0
	for i, w := range batch {
		var broken error
		results[i], broken = runSavepoint(w.ctx, tx, w.fn)
		if broken != nil {
			// The transaction itself is gone (rolled back whole): nothing
			// of the batch is kept, and nothing more may run on it.
			for _, w := range batch {
				w.done <- fmt.Errorf("store: %s: %w", w.op, broken)
			}
			return
		}
		if results[i] == nil {
			kept++
		}
	}
	if kept > 0 {
		if err := tx.Commit(); err != nil {
			for i, w := range batch {
				if results[i] == nil {
					results[i] = fmt.Errorf("store: %s: commit: %w", w.op, err)
				}
			}
		}
	}
	for i, w := range batch {
		w.done <- results[i]
	}
}

// runSavepoint runs fn inside a savepoint of tx, rolled back when fn
// fails; err is fn's. broken is set when the transaction cannot go on (a
// savepoint that cannot be set, released or rolled back to: SQLite rolled
// the whole transaction back).
func runSavepoint(ctx context.Context, tx *sql.Tx, fn func(tx *sql.Tx) error) (err, broken error) {
	keep := context.WithoutCancel(ctx)
	if _, err := tx.ExecContext(keep, "SAVEPOINT write"); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(tx); err != nil {
		if _, rerr := tx.ExecContext(keep, "ROLLBACK TO write"); rerr != nil {
			return err, fmt.Errorf("rollback to savepoint: %w", errors.Join(err, rerr))
		}
		if _, rerr := tx.ExecContext(keep, "RELEASE write"); rerr != nil {
			return err, fmt.Errorf("release savepoint: %w", rerr)
		}
		return err, nil
	}
	if _, err := tx.ExecContext(keep, "RELEASE write"); err != nil {
		return nil, fmt.Errorf("release savepoint: %w", err)
	}
	return nil, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// BeginWrite begins a write transaction (BEGIN IMMEDIATE) on this
// process's one writing connection: in-process writers queue for it, and
// while another process holds SQLite's write lock it begins again, with
// backoff, until it has the lock or ctx is done. So SQLITE_BUSY never
// reaches a caller whose context still lasts; only ctx's own error does.
// The caller must Commit or Rollback the transaction.
func (db *DB) BeginWrite(ctx context.Context) (*sql.Tx, error) {
	var tx *sql.Tx
	err := retryBusy(ctx, func() (err error) {
		tx, err = db.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE
		return err
	})
	return tx, err
}

// retryBusy runs do until it does not fail with SQLITE_BUSY/LOCKED or ctx
// is done (then the busy error is returned, wrapped with ctx's).
func retryBusy(ctx context.Context, do func() error) error {
	delay := time.Millisecond
	for {
		err := do()
		if err == nil || !isBusy(err) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// QueryContext runs a read query outside any transaction.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.db.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a read query expected to return at most one row.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return db.db.QueryRowContext(ctx, query, args...)
}

// ExecContext runs one write statement in a transaction of its own, on the
// writing connection, waiting out a busy database as [DB.BeginWrite] does.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := retryBusy(ctx, func() (err error) {
		res, err = db.w.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// Querier is what reads run on: a DB's handle or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Select runs query on q and reads every row it returns with scan.
func Select[T any](ctx context.Context, q Querier, scan func(Row, *T) error, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// IsConstraint reports whether err is a SQLite constraint violation (a
// taken key, a failed CHECK).
func IsConstraint(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == 19 // SQLITE_CONSTRAINT
}

// CheckRecord refuses an empty signed record or signature before it is
// stored.
func CheckRecord(record, signature []byte) error {
	if len(record) == 0 {
		return errors.New("empty record")
	}
	if len(signature) == 0 {
		return errors.New("empty signature")
	}
	return nil
}

// FixedTime formats times stored as text so that text order is time
// order.
const FixedTime = "2006-01-02T15:04:05.000000000Z"
