package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrConflict is returned when an insert finds its key taken.
var ErrConflict = errors.New("store: key already exists")

// The handle API below is what the stages' own typed stores are built on
// (admit's admissions and revocations, the coordinator's runs, attention
// items, receipts and used request states): each owner writes its own
// SQL against its own tables, and every other stage goes through that
// owner's typed API.

// Write runs fn in one write transaction, taking the write lock up front
// (BEGIN IMMEDIATE), and commits when fn returns nil; otherwise nothing fn
// did is kept. fn runs under the write lock, so it should be quick. op
// names the write in the error of a failed begin or commit ("insert
// admission", "seal run"), as fn's own errors name theirs.
//
// A database busy in another process is waited for (see [DB.BeginWrite]),
// never returned as an error while ctx lasts.
func (db *DB) Write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: %s: begin: %w", op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: commit: %w", op, err)
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
