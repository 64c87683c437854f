package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Each runs query and hands each row, scanned with scan, to fn, one at a
// time: what Select does without holding the rows, for tables that grow
// with the host's history.
func Each[T any](ctx context.Context, q Querier, scan func(Row, *T) error, fn func(*T) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var v T
	for rows.Next() {
		v = *new(T)
		if err := scan(rows, &v); err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Snapshot runs fn in one read transaction, so every query fn makes
// through tx sees the database at one moment, whatever is written
// meanwhile (in WAL mode it never waits for, nor holds up, a writer).
// Queries fn makes elsewhere (through db) are not part of the snapshot.
func (db *DB) Snapshot(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: read snapshot: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}
