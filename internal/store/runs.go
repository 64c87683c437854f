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
	if err := updateRunTx(ctx, tx, runID, update); err != nil {
		return err
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
	return db.queryRuns(ctx, `SELECT run_id, deployment, request_id, state FROM runs WHERE deployment = ? ORDER BY rowid`, deployment)
}

func (db *DB) queryRuns(ctx context.Context, query string, args ...any) ([]Run, error) {
	rows, err := db.db.QueryContext(ctx, query, args...)
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
	Attempt    int
	PrevDigest string
	Record     []byte
	Signature  []byte
}

// SealRun appends the receipt of one attempt of a run to the chain,
// records it in the run's state and appends the host's signed head
// checkpoint, in one write transaction. build gets the next sequence
// number and the previous receipt (nil for the first) and returns the
// signed record; mark gets the run's state and the new receipt's record
// and returns the state to store; checkpoint gets the new receipt, the
// number of runs stored and the previous checkpoint (nil for none) and
// returns the signed checkpoint, stored as version Seq of
// (KindCheckpoint, CheckpointKey). An attempt is sealed once: a second
// call for it changes nothing and returns (nil, nil, nil).
func (db *DB) SealRun(ctx context.Context, runID string, attempt int,
	build func(seq int64, prev *Receipt) (record, signature []byte, prevDigest string, err error),
	mark func(state, record []byte) ([]byte, error),
	checkpoint func(r *Receipt, runs int64, prev *Version) (record, signature []byte, err error)) (*Receipt, *Version, error) {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	defer tx.Rollback()
	var sealed int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM receipts WHERE run_id = ? AND attempt = ?`, runID, attempt).Scan(&sealed); err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	if sealed > 0 {
		return nil, nil, nil
	}
	prev, err := lastReceipt(ctx, tx, `SELECT seq, run_id, attempt, prev_digest, record, signature FROM receipts ORDER BY seq DESC LIMIT 1`)
	if err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	r := Receipt{Seq: 1, RunID: runID, Attempt: attempt}
	if prev != nil {
		r.Seq = prev.Seq + 1
	}
	if r.Record, r.Signature, r.PrevDigest, err = build(r.Seq, prev); err != nil {
		return nil, nil, err
	}
	if err := checkRecord(r.Record, r.Signature); err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO receipts (seq, run_id, attempt, prev_digest, record, signature) VALUES (?, ?, ?, ?, ?, ?)`, r.Seq, r.RunID, r.Attempt, r.PrevDigest, r.Record, r.Signature); err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	var state []byte
	if err := tx.QueryRowContext(ctx, `SELECT state FROM runs WHERE run_id = ?`, runID).Scan(&state); err != nil {
		return nil, nil, fmt.Errorf("store: seal run %s: %w", runID, err)
	}
	next, err := mark(state, r.Record)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, next, runID); err != nil {
		return nil, nil, fmt.Errorf("store: seal run %s: %w", runID, err)
	}
	cp, err := insertCheckpoint(ctx, tx, &r, checkpoint)
	if err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("store: seal run %s: %w", runID, err)
	}
	return &r, cp, nil
}

// KindCheckpoint and CheckpointKey name the host's signed receipt head
// checkpoints among the versioned records: version N is the head after
// receipt N.
const (
	KindCheckpoint = "checkpoint"
	CheckpointKey  = "receipts"
)

// insertCheckpoint appends the checkpoint of receipt r inside tx.
func insertCheckpoint(ctx context.Context, tx *sql.Tx, r *Receipt, checkpoint func(r *Receipt, runs int64, prev *Version) ([]byte, []byte, error)) (*Version, error) {
	var runs int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&runs); err != nil {
		return nil, fmt.Errorf("store: seal run: %w", err)
	}
	prev, err := latestVersion(ctx, tx, KindCheckpoint, CheckpointKey)
	if err != nil {
		return nil, err
	}
	v := Version{Kind: KindCheckpoint, Key: CheckpointKey, Seq: r.Seq}
	if v.Record, v.Signature, err = checkpoint(r, runs, prev); err != nil {
		return nil, err
	}
	if err := checkRecord(v.Record, v.Signature); err != nil {
		return nil, fmt.Errorf("store: seal run: checkpoint: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO versions (kind, key, seq, record, signature) VALUES (?, ?, ?, ?, ?)`, v.Kind, v.Key, v.Seq, v.Record, v.Signature); err != nil {
		return nil, fmt.Errorf("store: seal run: checkpoint #%d: %w", v.Seq, err)
	}
	return &v, nil
}

func lastReceipt(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, query string, args ...any) (*Receipt, error) {
	var p Receipt
	err := q.QueryRowContext(ctx, query, args...).Scan(&p.Seq, &p.RunID, &p.Attempt, &p.PrevDigest, &p.Record, &p.Signature)
	switch {
	case err == nil:
		return &p, nil
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	}
	return nil, err
}

// LastReceiptOf returns the receipt of the run's latest sealed attempt, or
// nil when none is sealed.
func (db *DB) LastReceiptOf(ctx context.Context, runID string) (*Receipt, error) {
	r, err := lastReceipt(ctx, db.db, `SELECT seq, run_id, attempt, prev_digest, record, signature FROM receipts WHERE run_id = ? ORDER BY attempt DESC LIMIT 1`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: read receipt: %w", err)
	}
	return r, nil
}

// Runs returns every run of every deployment in the order they were
// stored.
func (db *DB) Runs(ctx context.Context) ([]Run, error) {
	return db.queryRuns(ctx, `SELECT run_id, deployment, request_id, state FROM runs ORDER BY rowid`)
}

// PauseRun inserts an attention item and moves its run in one write
// transaction, so no decision can find the item before the run waits for
// it.
func (db *DB) PauseRun(ctx context.Context, a Attention, update func(state []byte) ([]byte, error)) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: pause run: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO attention (id, run_id, state) VALUES (?, ?, ?)`, a.ID, a.RunID, a.State); err != nil {
		return fmt.Errorf("store: pause run: %w", err)
	}
	if err := updateRunTx(ctx, tx, a.RunID, update); err != nil {
		return err
	}
	return tx.Commit()
}

// DecideAttention changes an attention item and its run in one write
// transaction: decide gets both states and returns both.
func (db *DB) DecideAttention(ctx context.Context, id string, decide func(item, run []byte) ([]byte, []byte, error)) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: decide: %w", err)
	}
	defer tx.Rollback()
	var runID string
	var item, run []byte
	if err := tx.QueryRowContext(ctx, `SELECT a.run_id, a.state, r.state FROM attention a JOIN runs r ON r.run_id = a.run_id WHERE a.id = ?`, id).Scan(&runID, &item, &run); err != nil {
		return fmt.Errorf("store: decide %s: %w", id, err)
	}
	item, run, err = decide(item, run)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE attention SET state = ? WHERE id = ?`, item, id); err != nil {
		return fmt.Errorf("store: decide %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, run, runID); err != nil {
		return fmt.Errorf("store: decide %s: %w", id, err)
	}
	return tx.Commit()
}

func updateRunTx(ctx context.Context, tx *sql.Tx, runID string, update func(state []byte) ([]byte, error)) error {
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
	return nil
}

// Receipts returns the whole chain by ascending sequence number.
func (db *DB) Receipts(ctx context.Context) ([]Receipt, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT seq, run_id, attempt, prev_digest, record, signature FROM receipts ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("store: read receipts: %w", err)
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		var r Receipt
		if err := rows.Scan(&r.Seq, &r.RunID, &r.Attempt, &r.PrevDigest, &r.Record, &r.Signature); err != nil {
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
