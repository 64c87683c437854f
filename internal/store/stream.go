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

// StreamDump reads what Dump reads, in one read transaction so every
// table is seen at one moment, but holds only the rows that do not grow
// with history: the admissions, revocations and versions other than
// checkpoints are handed to head in d (Runs and Receipts nil), then every
// checkpoint (a version of KindCheckpoint: one per sealed receipt) to
// checkpoint, every run to run and every receipt to receipt, one row at
// a time, each in Dump's order. Memory stays bounded however many runs
// the host has made.
func (db *DB) StreamDump(ctx context.Context, head func(d *Dump) error, checkpoint func(*Version) error, run func(*Run) error, receipt func(*Receipt) error) error {
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	defer tx.Rollback()
	var d Dump
	if d.Admissions, err = dumpTable(ctx, tx, ScanAdmission, `SELECT `+AdmissionColumns+` FROM admissions ORDER BY package, seq`); err != nil {
		return err
	}
	if d.Revocations, err = dumpTable(ctx, tx, ScanRevocation, `SELECT `+RevocationColumns+` FROM revocations ORDER BY seq`); err != nil {
		return err
	}
	if d.Versions, err = Select(ctx, tx, scanVersion, versionColumns+` WHERE kind <> ? ORDER BY kind, key, seq`, KindCheckpoint); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	if d.Versions == nil {
		d.Versions = []Version{}
	}
	if err := head(&d); err != nil {
		return err
	}
	if err := Each(ctx, tx, scanVersion, checkpoint, versionColumns+` WHERE kind = ? ORDER BY key, seq`, KindCheckpoint); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	if err := Each(ctx, tx, ScanRun, run, `SELECT `+RunColumns+` FROM runs ORDER BY rowid`); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	if err := Each(ctx, tx, ScanReceipt, receipt, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	return nil
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
