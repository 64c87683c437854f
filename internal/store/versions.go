package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Kinds of versioned records.
const (
	KindConnection = "connection"
	KindRegistry   = "registry"
	KindBinding    = "binding"
)

// KindCheckpoint and CheckpointKey name the host's signed receipt head
// checkpoints among the versioned records: version N is the head after
// receipt N.
const (
	KindCheckpoint = "checkpoint"
	CheckpointKey  = "receipts"
)

// Versions is the typed store of the versioned host records, the
// signed-version chains several stages share (connections, the
// registry's signatures, bindings, pins, checkpoints, fleet records).
type Versions struct{ db *DB }

// Versions returns the database's versioned records.
func (db *DB) Versions() *Versions { return &Versions{db} }

// Version is one version of a versioned host record.
type Version struct {
	Kind string
	Key  string
	// Seq is 1 for the first version of (Kind, Key), then 2, 3…
	Seq int64
	// Record and Signature are byte for byte what was inserted.
	Record    []byte
	Signature []byte
}

// Insert appends the next version of (kind, key) and returns its
// sequence number.
//
// In one write transaction it reads the current latest version (nil if there
// is none), calls build with the next sequence number and that version, and
// inserts what build returns. So an update computed from the previous
// version can never overwrite a concurrent one: writers are serialized, and
// each sees the version it replaces. If build fails nothing is written.
// build runs under the write lock: it must be quick and must not use the
// database.
func (s *Versions) Insert(ctx context.Context, kind, key string, build func(seq int64, prev *Version) (record, signature []byte, err error)) (int64, error) {
	if kind == "" || key == "" {
		return 0, errors.New("store: insert version: empty kind or key")
	}
	tx, err := s.db.BeginWrite(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: insert %s %s: %w", kind, key, err)
	}
	defer tx.Rollback()
	prev, err := LatestVersionTx(ctx, tx, kind, key)
	if err != nil {
		return 0, err
	}
	seq := int64(1)
	if prev != nil {
		seq = prev.Seq + 1
	}
	record, signature, err := build(seq, prev)
	if err != nil {
		return 0, err
	}
	if err := InsertVersionTx(ctx, tx, Version{Kind: kind, Key: key, Seq: seq, Record: record, Signature: signature}); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: insert %s %s #%d: %w", kind, key, seq, err)
	}
	return seq, nil
}

// InsertVersionTx inserts v inside tx: for an owner whose own write
// appends a version in the same transaction (the coordinator's receipt
// and its checkpoint).
func InsertVersionTx(ctx context.Context, tx *sql.Tx, v Version) error {
	if err := CheckRecord(v.Record, v.Signature); err != nil {
		return fmt.Errorf("store: insert %s %s #%d: %w", v.Kind, v.Key, v.Seq, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`,
		v.Kind, v.Key, v.Seq, v.Record, v.Signature); err != nil {
		return fmt.Errorf("store: insert %s %s #%d: %w", v.Kind, v.Key, v.Seq, err)
	}
	return nil
}

const versionColumns = `SELECT kind, key, seq, record, signature FROM versions`

// LatestVersionTx is Latest read through q (a transaction of the
// caller's, or the handle).
func LatestVersionTx(ctx context.Context, q Querier, kind, key string) (*Version, error) {
	vs, err := queryVersions(ctx, q, versionColumns+` WHERE kind = ? AND key = ? ORDER BY seq DESC LIMIT 1`, kind, key)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	return &vs[0], nil
}

// Latest returns the current version of (kind, key), or nil if it has
// none.
func (s *Versions) Latest(ctx context.Context, kind, key string) (*Version, error) {
	return LatestVersionTx(ctx, s.db.db, kind, key)
}

// History returns every version of (kind, key) by ascending Seq.
func (s *Versions) History(ctx context.Context, kind, key string) ([]Version, error) {
	return queryVersions(ctx, s.db.db, versionColumns+` WHERE kind = ? AND key = ? ORDER BY seq`, kind, key)
}

// LatestOfKind returns the current version of every key of kind, ordered
// by key.
func (s *Versions) LatestOfKind(ctx context.Context, kind string) ([]Version, error) {
	return queryVersions(ctx, s.db.db, versionColumns+` v WHERE kind = ? AND seq = (SELECT MAX(seq) FROM versions WHERE kind = v.kind AND key = v.key) ORDER BY key`, kind)
}

// scanVersion scans one row of versionColumns.
func scanVersion(r Row, v *Version) error {
	if err := r.Scan(&v.Kind, &v.Key, &v.Seq, &v.Record, &v.Signature); err != nil {
		return err
	}
	v.Record = Unpack(v.Record)
	return nil
}

func queryVersions(ctx context.Context, q Querier, query string, args ...any) ([]Version, error) {
	vs, err := Select(ctx, q, scanVersion, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read versions: %w", err)
	}
	return vs, nil
}
