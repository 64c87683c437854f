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

// Run is one stored run: its keys and its state document.
type Run struct {
	RunID      string
	Deployment string
	RequestID  string
	State      []byte
}

// InsertRun stores a new run. It returns ErrConflict (wrapped) when the
// deployment already has a run for the request id, so two callers racing
// on one request id get one run.
func (db *DB) InsertRun(ctx context.Context, r Run) error {
	_, err := db.db.ExecContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, ?, ?, ?)`, r.RunID, r.Deployment, r.RequestID, r.State)
	if isConstraint(err) {
		return fmt.Errorf("%w: run for request %s", ErrConflict, r.RequestID)
	}
	if err != nil {
		return fmt.Errorf("store: insert run: %w", err)
	}
	return nil
}

// UpdateRun replaces a run's state in one write transaction: update gets
// the current state and returns the next. It is how a run moves, so two
// writers never lose each other's step.
func (db *DB) UpdateRun(ctx context.Context, runID string, update func(state []byte) ([]byte, error)) error {
	tx, err := db.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return fmt.Errorf("store: update run: %w", err)
	}
	defer tx.Rollback()
	var cur []byte
	if err := tx.QueryRowContext(ctx, `SELECT state FROM runs WHERE run_id = ?`, runID).Scan(&cur); err != nil {
		return fmt.Errorf("store: update run %s: %w", runID, err)
	}
	next, err := update(cur)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, next, runID); err != nil {
		return fmt.Errorf("store: update run %s: %w", runID, err)
	}
	return tx.Commit()
}

// RunByID returns a run, or nil when there is none.
func (db *DB) RunByID(ctx context.Context, runID string) (*Run, error) {
	return db.queryRun(ctx, `SELECT run_id, deployment, request_id, state FROM runs WHERE run_id = ?`, runID)
}

// RunByRequest returns the deployment's run for a request id, or nil.
func (db *DB) RunByRequest(ctx context.Context, deployment, requestID string) (*Run, error) {
	return db.queryRun(ctx, `SELECT run_id, deployment, request_id, state FROM runs WHERE deployment = ? AND request_id = ?`, deployment, requestID)
}

// RunsOf returns every run of the deployment in the order they were
// stored.
func (db *DB) RunsOf(ctx context.Context, deployment string) ([]Run, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT run_id, deployment, request_id, state FROM runs WHERE deployment = ? ORDER BY rowid`, deployment)
	if err != nil {
		return nil, fmt.Errorf("store: read runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		if err := rows.Scan(&r.RunID, &r.Deployment, &r.RequestID, &r.State); err != nil {
			return nil, fmt.Errorf("store: read runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (db *DB) queryRun(ctx context.Context, query string, args ...any) (*Run, error) {
	var r Run
	err := db.db.QueryRowContext(ctx, query, args...).Scan(&r.RunID, &r.Deployment, &r.RequestID, &r.State)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read run: %w", err)
	}
	return &r, nil
}

// Attention is one stored attention item.
type Attention struct {
	ID    string
	RunID string
	State []byte
}

// InsertAttention stores a new attention item.
func (db *DB) InsertAttention(ctx context.Context, a Attention) error {
	if _, err := db.db.ExecContext(ctx, `INSERT INTO attention (id, run_id, state) VALUES (?, ?, ?)`, a.ID, a.RunID, a.State); err != nil {
		return fmt.Errorf("store: insert attention item: %w", err)
	}
	return nil
}

// UpdateAttention replaces an attention item's state in one write
// transaction, as UpdateRun does for runs.
func (db *DB) UpdateAttention(ctx context.Context, id string, update func(state []byte) ([]byte, error)) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: update attention item: %w", err)
	}
	defer tx.Rollback()
	var cur []byte
	if err := tx.QueryRowContext(ctx, `SELECT state FROM attention WHERE id = ?`, id).Scan(&cur); err != nil {
		return fmt.Errorf("store: update attention item %s: %w", id, err)
	}
	next, err := update(cur)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE attention SET state = ? WHERE id = ?`, next, id); err != nil {
		return fmt.Errorf("store: update attention item %s: %w", id, err)
	}
	return tx.Commit()
}

// AttentionByID returns an attention item, or nil.
func (db *DB) AttentionByID(ctx context.Context, id string) (*Attention, error) {
	var a Attention
	err := db.db.QueryRowContext(ctx, `SELECT id, run_id, state FROM attention WHERE id = ?`, id).Scan(&a.ID, &a.RunID, &a.State)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read attention item: %w", err)
	}
	return &a, nil
}

// AttentionItems returns every attention item, oldest first.
func (db *DB) AttentionItems(ctx context.Context) ([]Attention, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT id, run_id, state FROM attention ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("store: read attention items: %w", err)
	}
	defer rows.Close()
	var out []Attention
	for rows.Next() {
		var a Attention
		if err := rows.Scan(&a.ID, &a.RunID, &a.State); err != nil {
			return nil, fmt.Errorf("store: read attention items: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Receipt is one stored receipt.
type Receipt struct {
	Seq        int64
	RunID      string
	PrevDigest string
	Record     []byte
	Signature  []byte
}

// AppendReceipt appends the next receipt of the chain in one write
// transaction: build gets the next sequence number and the previous
// receipt (nil for the first) and returns the signed record.
func (db *DB) AppendReceipt(ctx context.Context, runID string, build func(seq int64, prev *Receipt) (record, signature []byte, prevDigest string, err error)) (*Receipt, error) {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: append receipt: %w", err)
	}
	defer tx.Rollback()
	var prev *Receipt
	var p Receipt
	err = tx.QueryRowContext(ctx, `SELECT seq, run_id, prev_digest, record, signature FROM receipts ORDER BY seq DESC LIMIT 1`).Scan(&p.Seq, &p.RunID, &p.PrevDigest, &p.Record, &p.Signature)
	switch {
	case err == nil:
		prev = &p
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("store: append receipt: %w", err)
	}
	r := Receipt{Seq: 1, RunID: runID}
	if prev != nil {
		r.Seq = prev.Seq + 1
	}
	if r.Record, r.Signature, r.PrevDigest, err = build(r.Seq, prev); err != nil {
		return nil, err
	}
	if err := checkRecord(r.Record, r.Signature); err != nil {
		return nil, fmt.Errorf("store: append receipt: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO receipts (seq, run_id, prev_digest, record, signature) VALUES (?, ?, ?, ?, ?)`, r.Seq, r.RunID, r.PrevDigest, r.Record, r.Signature); err != nil {
		return nil, fmt.Errorf("store: append receipt: %w", err)
	}
	return &r, tx.Commit()
}

// Receipts returns the whole chain by ascending sequence number.
func (db *DB) Receipts(ctx context.Context) ([]Receipt, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT seq, run_id, prev_digest, record, signature FROM receipts ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("store: read receipts: %w", err)
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		var r Receipt
		if err := rows.Scan(&r.Seq, &r.RunID, &r.PrevDigest, &r.Record, &r.Signature); err != nil {
			return nil, fmt.Errorf("store: read receipts: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// UseState records a single-use nonce. It returns ErrConflict (wrapped)
// when the nonce was used before; expired nonces are forgotten.
func (db *DB) UseState(ctx context.Context, nonce string, expires, now time.Time) error {
	if _, err := db.db.ExecContext(ctx, `DELETE FROM used_states WHERE expires_at < ?`, now.UTC().Format(fixedTime)); err != nil {
		return fmt.Errorf("store: use state: %w", err)
	}
	_, err := db.db.ExecContext(ctx, `INSERT INTO used_states (nonce, expires_at) VALUES (?, ?)`, nonce, expires.UTC().Format(fixedTime))
	if isConstraint(err) {
		return fmt.Errorf("%w: state used before", ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: use state: %w", err)
	}
	return nil
}

// isConstraint reports whether err is a SQLite constraint violation.
func isConstraint(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == 19 // SQLITE_CONSTRAINT
}

// fixedTime formats times so that text order is time order.
const fixedTime = "2006-01-02T15:04:05.000000000Z"
