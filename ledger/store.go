package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/oa-dev/oa/internal/store"
)

// Tables is the ledger's typed store over the host database, the one the
// coordinator writes its runs through: the ledger owns the runs,
// attention, receipts and used_states tables (their schema is
// internal/store's migration 3, kept there so existing databases open
// unchanged), and appends the receipt head checkpoint to the shared
// versions inside the receipt's own transaction. It holds no key: what
// needs the host's keys (sealing, checking, proving) is the Ledger's.
type Tables struct{ db *store.DB }

// Tables is this ledger's tables.
func (l *Ledger) Tables() Tables { return Tables{l.db} }

// InsertRun stores a new run. It returns store.ErrConflict (wrapped) when
// the deployment already has a run for the request id, so two callers
// racing on one request id get one run.
func (l Tables) InsertRun(ctx context.Context, r RunRow) error {
	// Through Write, so that the inserts of concurrent runs share a
	// commit with their other writes. Packed, like every state the run
	// has after: stored plain until the seal packed them, runs took 74 B
	// more each on disk (BenchmarkAuditHistory, 1,000 runs: 2,048
	// against 1,974 B a run), over the 2 KB a run the history allows.
	err := l.db.Write(ctx, "insert run", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, ?, ?, ?)`, r.RunID, r.Deployment, r.RequestID, store.Pack(r.State))
		return err
	})
	if store.IsConstraint(err) {
		return fmt.Errorf("%w: run for request %s", store.ErrConflict, r.RequestID)
	}
	if err != nil {
		return fmt.Errorf("store: insert run: %w", err)
	}
	return nil
}

// UpdateRun replaces a run's state in one write transaction: update gets
// the current state and returns the next. It is how a run moves, so two
// writers never lose each other's step.
func (l Tables) UpdateRun(ctx context.Context, runID string, update func(state []byte) ([]byte, error)) error {
	return l.db.Write(ctx, "update run", func(tx *sql.Tx) error { return updateRunTx(ctx, tx, runID, update) })
}

// RunByID returns a run, or nil when there is none.
func (l Tables) RunByID(ctx context.Context, runID string) (*RunRow, error) {
	return l.queryRun(ctx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID)
}

// RunByRequest returns the deployment's run for a request id, or nil.
func (l Tables) RunByRequest(ctx context.Context, deployment, requestID string) (*RunRow, error) {
	return l.queryRun(ctx, `SELECT `+runColumns+` FROM runs WHERE deployment = ? AND request_id = ?`, deployment, requestID)
}

// Runs returns every run of every deployment in the order they were
// stored.
func (l Tables) Runs(ctx context.Context) ([]RunRow, error) {
	out, err := store.Select(ctx, l.db, scanRun, `SELECT `+runColumns+` FROM runs ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("store: read runs: %w", err)
	}
	return out, nil
}

// RunsOf returns every run of the deployment in the order they were
// stored.
func (l Tables) RunsOf(ctx context.Context, deployment string) ([]RunRow, error) {
	out, err := store.Select(ctx, l.db, scanRun, `SELECT `+runColumns+` FROM runs WHERE deployment = ? ORDER BY rowid`, deployment)
	if err != nil {
		return nil, fmt.Errorf("store: read runs: %w", err)
	}
	return out, nil
}

func (l Tables) queryRun(ctx context.Context, query string, args ...any) (*RunRow, error) {
	var r RunRow
	err := scanRun(l.db.QueryRowContext(ctx, query, args...), &r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read run: %w", err)
	}
	return &r, nil
}

// AttentionByID returns an attention item, or nil.
func (l Tables) AttentionByID(ctx context.Context, id string) (*AttentionRow, error) {
	var a AttentionRow
	err := l.db.QueryRowContext(ctx, `SELECT id, run_id, state FROM attention WHERE id = ?`, id).Scan(&a.ID, &a.RunID, &a.State)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read attention item: %w", err)
	}
	return &a, nil
}

// AttentionItems returns every attention item, oldest first.
func (l Tables) AttentionItems(ctx context.Context) ([]AttentionRow, error) {
	return l.attentionWhere(ctx, `SELECT id, run_id, state FROM attention ORDER BY rowid`)
}

// OpenAttentionItems returns the attention items whose document says
// they are open, oldest first, read through the index of open items
// (store.OpenAttention): its cost follows the open items, not every item
// the host ever stored.
func (l Tables) OpenAttentionItems(ctx context.Context) ([]AttentionRow, error) {
	return l.attentionWhere(ctx, `SELECT id, run_id, state FROM attention INDEXED BY attention_open WHERE `+store.OpenAttention+` ORDER BY rowid`)
}

func (l Tables) attentionWhere(ctx context.Context, query string) ([]AttentionRow, error) {
	out, err := store.Select(ctx, l.db, func(r store.Row, a *AttentionRow) error { return r.Scan(&a.ID, &a.RunID, &a.State) }, query)
	if err != nil {
		return nil, fmt.Errorf("store: read attention items: %w", err)
	}
	return out, nil
}

// seal appends the receipt of one attempt of a run to the chain,
// records it in the run's state and appends the host's signed head
// checkpoint, in one write transaction. attempt gets the run's stored
// state and returns the attempt to seal (it may first end the run: the
// state it leaves is what build and mark use); build gets the next
// sequence number and the previous receipt (nil for the first) and
// returns the signed record; mark gets the new receipt's record and
// returns the state to store; checkpoint gets the new receipt, the
// number of runs stored and the previous checkpoint (nil for none) and
// returns the signed checkpoint, stored as version Seq of
// (store.KindCheckpoint, store.CheckpointKey). An attempt is sealed once:
// a second call for it changes nothing and returns (nil, nil, nil); so
// does attempt returning errNothingToSeal. leaf, when given, appends the
// receipt to the host's transparency log in the same transaction (log.go).
func (l Tables) seal(ctx context.Context, runID string,
	attempt func(state []byte) (int, error),
	build func(seq int64, prev *ReceiptRow) (record, signature []byte, prevDigest string, err error),
	mark func(record []byte) ([]byte, error),
	checkpoint func(r *ReceiptRow, runs int64, prev *store.Version) (record, signature []byte, err error),
	leaf func(tx *sql.Tx, r *ReceiptRow) error) (*ReceiptRow, *store.Version, error) {
	var sealed *ReceiptRow
	var cp *store.Version
	var remember func()
	err := l.db.Write(ctx, "seal run", func(tx *sql.Tx) error {
		var state []byte
		var deployment, requestID string
		if err := tx.QueryRowContext(ctx, `SELECT state, deployment, request_id FROM runs WHERE run_id = ?`, runID).Scan(&state, &deployment, &requestID); err != nil {
			return fmt.Errorf("store: seal run %s: %w", runID, err)
		}
		n, err := attempt(store.Unpack(state))
		if errors.Is(err, errNothingToSeal) {
			return nil
		}
		if err != nil {
			return err
		}
		var sealedBefore int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM receipts WHERE run_id = ? AND attempt = ?`, runID, n).Scan(&sealedBefore); err != nil {
			return fmt.Errorf("store: seal run: %w", err)
		}
		if sealedBefore > 0 {
			return errAttemptSealed
		}
		prev, err := lastReceipt(ctx, tx, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq DESC LIMIT 1`)
		if err != nil {
			return fmt.Errorf("store: seal run: %w", err)
		}
		r := ReceiptRow{Seq: 1, RunID: runID, Attempt: n}
		if prev != nil {
			r.Seq = prev.Seq + 1
		}
		if r.Record, r.Signature, r.PrevDigest, err = build(r.Seq, prev); err != nil {
			return err
		}
		if err := store.CheckRecord(r.Record, r.Signature); err != nil {
			return fmt.Errorf("store: seal run: %w", err)
		}
		// The receipt is stored plain: an incremental verify hashes every
		// receipt up to its mark, and unpacking each would cost more than
		// the bytes it saves (docs/PERFORMANCE.md, note 8). Run states and
		// checkpoints are packed.
		if _, err := tx.ExecContext(ctx, `INSERT INTO receipts (`+ReceiptColumns+`, deployment, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Seq, r.RunID, r.Attempt, r.PrevDigest, r.Record, r.Signature, deployment, requestID); err != nil {
			return fmt.Errorf("store: seal run: %w", err)
		}
		next, err := mark(r.Record)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, store.Pack(next), runID); err != nil {
			return fmt.Errorf("store: seal run %s: %w", runID, err)
		}
		if cp, remember, err = l.insertCheckpoint(ctx, tx, &r, checkpoint); err != nil {
			return err
		}
		if leaf != nil {
			if err := leaf(tx, &r); err != nil {
				return err
			}
		}
		sealed = &r
		return nil
	})
	if errors.Is(err, errAttemptSealed) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if remember != nil {
		remember()
	}
	return sealed, cp, nil
}

var (
	// errNothingToSeal is what seal's attempt returns for a run with
	// nothing to seal: not terminal, or its receipt already named.
	errNothingToSeal = errors.New("ledger: nothing to seal")
	// errAttemptSealed rolls back a seal whose attempt the chain holds
	// already (whatever attempt did to the state is not kept).
	errAttemptSealed = errors.New("ledger: the attempt is sealed already")
)

// insertCheckpoint appends the checkpoint of receipt r inside tx; the
// runs it signs are counted without reading the whole table
// (store.DB.CountRows), and remember keeps that count once tx committed.
func (l Tables) insertCheckpoint(ctx context.Context, tx *sql.Tx, r *ReceiptRow, checkpoint func(r *ReceiptRow, runs int64, prev *store.Version) ([]byte, []byte, error)) (_ *store.Version, remember func(), _ error) {
	runs, remember, err := l.db.CountRows(ctx, tx, "runs")
	if err != nil {
		return nil, nil, fmt.Errorf("store: seal run: %w", err)
	}
	prev, err := store.LatestVersionTx(ctx, tx, store.KindCheckpoint, store.CheckpointKey)
	if err != nil {
		return nil, nil, err
	}
	v := store.Version{Kind: store.KindCheckpoint, Key: store.CheckpointKey, Seq: r.Seq}
	if v.Record, v.Signature, err = checkpoint(r, runs, prev); err != nil {
		return nil, nil, err
	}
	packed := v
	packed.Record = store.Pack(v.Record)
	if err := store.InsertVersionTx(ctx, tx, packed); err != nil {
		return nil, nil, fmt.Errorf("store: seal run: checkpoint: %w", err)
	}
	return &v, remember, nil
}

func lastReceipt(ctx context.Context, q store.Querier, query string, args ...any) (*ReceiptRow, error) {
	var p ReceiptRow
	err := scanReceipt(q.QueryRowContext(ctx, query, args...), &p)
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
func (l Tables) LastReceiptOf(ctx context.Context, runID string) (*ReceiptRow, error) {
	r, err := lastReceipt(ctx, l.db, `SELECT `+ReceiptColumns+` FROM receipts WHERE run_id = ? ORDER BY attempt DESC LIMIT 1`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: read receipt: %w", err)
	}
	return r, nil
}

// SealedRunOf returns the run id of a receipt sealed for the
// deployment's request, "" when the chain holds none (or only receipts
// sealed before receipts named their request).
func (l Tables) SealedRunOf(ctx context.Context, deployment, requestID string) (string, error) {
	var runID string
	err := l.db.QueryRowContext(ctx, `SELECT run_id FROM receipts WHERE deployment = ? AND request_id = ? LIMIT 1`, deployment, requestID).Scan(&runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: read receipt: %w", err)
	}
	return runID, nil
}

// PauseRun inserts an attention item and moves its run in one write
// transaction, so no decision can find the item before the run waits for
// it.
func (l Tables) PauseRun(ctx context.Context, a AttentionRow, update func(state []byte) ([]byte, error)) error {
	return l.db.Write(ctx, "pause run", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO attention (id, run_id, state) VALUES (?, ?, ?)`, a.ID, a.RunID, a.State); err != nil {
			return fmt.Errorf("store: pause run: %w", err)
		}
		return updateRunTx(ctx, tx, a.RunID, update)
	})
}

// DecideAttention changes an attention item and its run in one write
// transaction: decide gets both states and returns both.
func (l Tables) DecideAttention(ctx context.Context, id string, decide func(item, run []byte) ([]byte, []byte, error)) error {
	return l.db.Write(ctx, "decide attention item", func(tx *sql.Tx) error {
		var runID string
		var item, run []byte
		if err := tx.QueryRowContext(ctx, `SELECT a.run_id, a.state, r.state FROM attention a JOIN runs r ON r.run_id = a.run_id WHERE a.id = ?`, id).Scan(&runID, &item, &run); err != nil {
			return fmt.Errorf("store: decide %s: %w", id, err)
		}
		item, run, err := decide(item, store.Unpack(run))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attention SET state = ? WHERE id = ?`, item, id); err != nil {
			return fmt.Errorf("store: decide %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, store.Pack(run), runID); err != nil {
			return fmt.Errorf("store: decide %s: %w", id, err)
		}
		return nil
	})
}

func updateRunTx(ctx context.Context, tx *sql.Tx, runID string, update func(state []byte) ([]byte, error)) error {
	var cur []byte
	if err := tx.QueryRowContext(ctx, `SELECT state FROM runs WHERE run_id = ?`, runID).Scan(&cur); err != nil {
		return fmt.Errorf("store: update run %s: %w", runID, err)
	}
	next, err := update(store.Unpack(cur))
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET state = ? WHERE run_id = ?`, store.Pack(next), runID); err != nil {
		return fmt.Errorf("store: update run %s: %w", runID, err)
	}
	return nil
}

// UseState records a single-use nonce. It returns store.ErrConflict
// (wrapped) when the nonce was used before; expired nonces are forgotten.
func (l Tables) UseState(ctx context.Context, nonce string, expires, now time.Time) error {
	if _, err := l.db.ExecContext(ctx, `DELETE FROM used_states WHERE expires_at < ?`, now.UTC().Format(store.FixedTime)); err != nil {
		return fmt.Errorf("store: use state: %w", err)
	}
	_, err := l.db.ExecContext(ctx, `INSERT INTO used_states (nonce, expires_at) VALUES (?, ?)`, nonce, expires.UTC().Format(store.FixedTime))
	if store.IsConstraint(err) {
		return fmt.Errorf("%w: state used before", store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: use state: %w", err)
	}
	return nil
}
