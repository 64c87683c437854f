package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Dump is every signed row of a database and the coordinator's runs and
// receipts, byte for byte: what an audit bundle carries so a verifier
// elsewhere can rebuild the store and judge it with the same code the
// host uses. Attention items and used request states are left out: no
// chain link rests on them.
type Dump struct {
	Admissions  []Admission  `json:"admissions"`
	Revocations []Revocation `json:"revocations"`
	Versions    []Version    `json:"versions"`
	Runs        []Run        `json:"runs"`
	Receipts    []Receipt    `json:"receipts"`
}

// Dump reads the whole database in one read transaction, so every table
// is seen at one moment.
func (db *DB) Dump(ctx context.Context) (*Dump, error) {
	tx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: dump: %w", err)
	}
	defer tx.Rollback()
	var d Dump
	if d.Admissions, err = dumpTable(ctx, tx, ScanAdmission, `SELECT `+AdmissionColumns+` FROM admissions ORDER BY package, seq`); err != nil {
		return nil, err
	}
	if d.Revocations, err = dumpTable(ctx, tx, ScanRevocation, `SELECT `+RevocationColumns+` FROM revocations ORDER BY seq`); err != nil {
		return nil, err
	}
	if d.Versions, err = dumpTable(ctx, tx, scanVersion, versionColumns+` ORDER BY kind, key, seq`); err != nil {
		return nil, err
	}
	if d.Runs, err = dumpTable(ctx, tx, ScanRun, `SELECT `+RunColumns+` FROM runs ORDER BY rowid`); err != nil {
		return nil, err
	}
	if d.Receipts, err = dumpTable(ctx, tx, ScanReceipt, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`); err != nil {
		return nil, err
	}
	return &d, nil
}

// dumpTable reads one table for Dump, each row with its owner's scan; an
// empty table is an empty list (a bundle shows [], not null).
func dumpTable[T any](ctx context.Context, tx *sql.Tx, scan func(Row, *T) error, query string) ([]T, error) {
	rows, err := Select(ctx, tx, scan, query)
	if err != nil {
		return nil, fmt.Errorf("store: dump: %w", err)
	}
	if rows == nil {
		rows = []T{}
	}
	return rows, nil
}

// Restore writes d into an empty database in one write transaction, every
// row as it is (nothing is judged here: the stages that read the rows
// verify them). It refuses a database that holds any row.
func (db *DB) Restore(ctx context.Context, d *Dump) error {
	return db.RestoreStream(ctx, d, eachOf[Version](nil), eachOf(d.Runs), eachOf(d.Receipts))
}

// RowSource hands its rows, one at a time, to add, stopping at add's
// first error: how RestoreStream reads the tables that grow with history.
type RowSource[T any] func(add func(*T) error) error

// eachOf is the RowSource of a list.
func eachOf[T any](rows []T) RowSource[T] {
	return func(add func(*T) error) error {
		for i := range rows {
			if err := add(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// RestoreStream is Restore with d's runs and receipts ignored and read
// instead from runs and receipts, and more versions (the checkpoints)
// read from versions, a row at a time, into one transaction: memory
// stays bounded whatever the history's length.
func (db *DB) RestoreStream(ctx context.Context, d *Dump, versions RowSource[Version], runs RowSource[Run], receipts RowSource[Receipt]) error {
	tx, err := db.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM admissions) + (SELECT COUNT(*) FROM versions) + (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM receipts) + (SELECT COUNT(*) FROM revocations)`).Scan(&n); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if n > 0 {
		return errors.New("store: restore: the database is not empty")
	}
	exec := func(query string, args ...any) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}
	last := map[string]int64{}
	for _, a := range d.Admissions {
		if a.Seq > last[a.Package] {
			last[a.Package] = a.Seq
		}
	}
	for pkg, seq := range last {
		if err := exec(`INSERT INTO admission_sequences (package, last_seq) VALUES (?, ?)`, pkg, seq); err != nil {
			return fmt.Errorf("store: restore: %w", err)
		}
	}
	for _, a := range d.Admissions {
		if err := exec(`INSERT INTO admissions (package, seq, artifact_digest, record, signature) VALUES (?, ?, ?, ?, ?)`, a.Package, a.Seq, a.ArtifactDigest, a.Record, a.Signature); err != nil {
			return fmt.Errorf("store: restore admission %s #%d: %w", a.Package, a.Seq, err)
		}
	}
	for _, r := range d.Revocations {
		if err := exec(`INSERT INTO revocations (seq, artifact_digest, record, signature) VALUES (?, ?, ?, ?)`, r.Seq, r.ArtifactDigest, r.Record, r.Signature); err != nil {
			return fmt.Errorf("store: restore revocation #%d: %w", r.Seq, err)
		}
	}
	for _, v := range d.Versions {
		if err := exec(`INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`, v.Kind, v.Key, v.Seq, v.Record, v.Signature); err != nil {
			return fmt.Errorf("store: restore %s %s #%d: %w", v.Kind, v.Key, v.Seq, err)
		}
	}
	insertVersion, err := tx.PrepareContext(ctx, `INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer insertVersion.Close()
	err = versions(func(v *Version) error {
		if _, err := insertVersion.ExecContext(ctx, v.Kind, v.Key, v.Seq, v.Record, v.Signature); err != nil {
			return fmt.Errorf("store: restore %s %s #%d: %w", v.Kind, v.Key, v.Seq, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	insertRun, err := tx.PrepareContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer insertRun.Close()
	err = runs(func(r *Run) error {
		if _, err := insertRun.ExecContext(ctx, r.RunID, r.Deployment, r.RequestID, r.State); err != nil {
			return fmt.Errorf("store: restore run: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	insertReceipt, err := tx.PrepareContext(ctx, `INSERT INTO receipts (seq, run_id, attempt, prev_digest, record, signature) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	defer insertReceipt.Close()
	err = receipts(func(r *Receipt) error {
		if _, err := insertReceipt.ExecContext(ctx, r.Seq, r.RunID, r.Attempt, r.PrevDigest, r.Record, r.Signature); err != nil {
			return fmt.Errorf("store: restore receipt #%d: %w", r.Seq, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tx.Commit()
}

// RunsOf returns every run of the deployment in the order they were
// stored: a read of the coordinator's runs like Dump's, for the harness's
// transcript, which comes before the coordinator in the stage order and
// so cannot use its typed store.
func (db *DB) RunsOf(ctx context.Context, deployment string) ([]Run, error) {
	out, err := Select(ctx, db.db, ScanRun, `SELECT `+RunColumns+` FROM runs WHERE deployment = ? ORDER BY rowid`, deployment)
	if err != nil {
		return nil, fmt.Errorf("store: read runs: %w", err)
	}
	return out, nil
}
