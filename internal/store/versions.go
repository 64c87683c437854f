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

// InsertVersion appends the next version of (kind, key) and returns its
// sequence number.
//
// In one write transaction it reads the current latest version (nil if there
// is none), calls build with the next sequence number and that version, and
// inserts what build returns. So an update computed from the previous
// version can never overwrite a concurrent one: writers are serialized, and
// each sees the version it replaces. If build fails nothing is written.
// build runs under the write lock: it must be quick and must not use the
// database.
func (db *DB) InsertVersion(ctx context.Context, kind, key string, build func(seq int64, prev *Version) (record, signature []byte, err error)) (int64, error) {
	if kind == "" || key == "" {
		return 0, errors.New("store: insert version: empty kind or key")
	}
	tx, err := db.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return 0, fmt.Errorf("store: insert %s %s: %w", kind, key, err)
	}
	defer tx.Rollback()
	prev, err := latestVersion(ctx, tx, kind, key)
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
	if err := checkRecord(record, signature); err != nil {
		return 0, fmt.Errorf("store: insert %s %s #%d: %w", kind, key, seq, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`,
		kind, key, seq, record, signature); err != nil {
		return 0, fmt.Errorf("store: insert %s %s #%d: %w", kind, key, seq, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: insert %s %s #%d: %w", kind, key, seq, err)
	}
	return seq, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const versionColumns = `SELECT kind, key, seq, record, signature FROM versions`

func latestVersion(ctx context.Context, q querier, kind, key string) (*Version, error) {
	vs, err := queryVersions(ctx, q, versionColumns+` WHERE kind = ? AND key = ? ORDER BY seq DESC LIMIT 1`, kind, key)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	return &vs[0], nil
}

// LatestVersion returns the current version of (kind, key), or nil if it has
// none.
func (db *DB) LatestVersion(ctx context.Context, kind, key string) (*Version, error) {
	return latestVersion(ctx, db.db, kind, key)
}

// Versions returns every version of (kind, key) by ascending Seq.
func (db *DB) Versions(ctx context.Context, kind, key string) ([]Version, error) {
	return queryVersions(ctx, db.db, versionColumns+` WHERE kind = ? AND key = ? ORDER BY seq`, kind, key)
}

// LatestVersions returns the current version of every key of kind, ordered
// by key.
func (db *DB) LatestVersions(ctx context.Context, kind string) ([]Version, error) {
	return queryVersions(ctx, db.db, versionColumns+` v WHERE kind = ? AND seq = (SELECT MAX(seq) FROM versions WHERE kind = v.kind AND key = v.key) ORDER BY key`, kind)
}

func queryVersions(ctx context.Context, q querier, query string, args ...any) ([]Version, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read versions: %w", err)
	}
	defer rows.Close()
	var vs []Version
	for rows.Next() {
		var v Version
		if err := rows.Scan(&v.Kind, &v.Key, &v.Seq, &v.Record, &v.Signature); err != nil {
			return nil, fmt.Errorf("store: read versions: %w", err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read versions: %w", err)
	}
	return vs, nil
}
