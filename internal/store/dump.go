package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
)

// Row is what a scan reads one row from: *sql.Rows or *sql.Row.
type Row interface{ Scan(...any) error }

// The mechanism below copies tables out of one read transaction and back
// into one write transaction, byte for byte, without knowing what the
// rows mean: each owning stage reads and restores its own tables with it
// (admit's admissions and revocations, the ledger's runs and receipts,
// the versions here), and whoever sits above them all (the audit bundle)
// assembles the copy.

// DumpTable reads one table for a copy, each row with its owner's scan;
// an empty table is an empty list (a bundle shows [], not null).
func DumpTable[T any](ctx context.Context, q Querier, scan func(Row, *T) error, query string, args ...any) ([]T, error) {
	rows, err := Select(ctx, q, scan, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: dump: %w", err)
	}
	if rows == nil {
		rows = []T{}
	}
	return rows, nil
}

// VersionsButCheckpointsIn is every version but the checkpoints, as tx
// sees them, in the order a copy lists them (kind, key, seq): the
// versions that do not grow with the host's history (see
// EachCheckpointIn).
func VersionsButCheckpointsIn(ctx context.Context, tx *sql.Tx) ([]Version, error) {
	return DumpTable(ctx, tx, scanVersion, versionColumns+` WHERE kind <> ? ORDER BY kind, key, seq`, KindCheckpoint)
}

// EachCheckpointIn hands every checkpoint (a version of KindCheckpoint:
// one per sealed receipt) to fn, one at a time, as tx sees them.
func EachCheckpointIn(ctx context.Context, tx *sql.Tx, fn func(*Version) error) error {
	if err := Each(ctx, tx, scanVersion, fn, versionColumns+` WHERE kind = ? ORDER BY key, seq`, KindCheckpoint); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	return nil
}

// Restore runs fn in one write transaction, once (never retried), and
// commits what it wrote: how a copy is written back into an empty
// database, each owner restoring its tables in tx.
func (db *DB) Restore(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// tableName is what RequireEmpty takes as a table's name: it is put into
// the query as it is, so it is held to a plain identifier.
var tableName = regexp.MustCompile(`^[a-z_]+$`)

// RequireEmpty refuses, before a restore writes, tables that hold any
// row: a copy is restored only into a database made for it.
func RequireEmpty(ctx context.Context, tx *sql.Tx, tables ...string) error {
	for _, t := range tables {
		if !tableName.MatchString(t) {
			return fmt.Errorf("store: restore: %q is not a table name", t)
		}
		var any int
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&any)
		if err != nil {
			return fmt.Errorf("store: restore: %w", err)
		}
		if any != 0 {
			return errors.New("store: restore: the database is not empty")
		}
	}
	return nil
}

// RowSource hands its rows, one at a time, to add, stopping at add's
// first error: how a restore reads the tables that grow with history.
type RowSource[T any] func(add func(*T) error) error

// EachOf is the RowSource of a list.
func EachOf[T any](rows []T) RowSource[T] {
	return func(add func(*T) error) error {
		for i := range rows {
			if err := add(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// InsertEach runs insert once for every row of src, with the arguments
// args gives for it, in tx; an insert that fails is named by the what
// args gives with them. An error of src itself is returned as it is.
func InsertEach[T any](ctx context.Context, tx *sql.Tx, insert string, src RowSource[T], args func(*T) (values []any, what string)) error {
	stmt, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer stmt.Close()
	return src(func(row *T) error {
		values, what := args(row)
		if _, err := stmt.ExecContext(ctx, values...); err != nil {
			return fmt.Errorf("store: restore %s: %w", what, err)
		}
		return nil
	})
}

// RestoreVersionsIn writes versions, then the versions more hands over a
// row at a time (the checkpoints), every row as it is, into the empty
// versions table in tx.
func RestoreVersionsIn(ctx context.Context, tx *sql.Tx, versions []Version, more RowSource[Version]) error {
	if err := RequireEmpty(ctx, tx, "versions"); err != nil {
		return err
	}
	args := func(v *Version) ([]any, string) {
		return []any{v.Kind, v.Key, v.Seq, v.Record, v.Signature}, fmt.Sprintf("%s %s #%d", v.Kind, v.Key, v.Seq)
	}
	const insert = `INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`
	if err := InsertEach(ctx, tx, insert, EachOf(versions), args); err != nil {
		return err
	}
	return InsertEach(ctx, tx, insert, more, args)
}
