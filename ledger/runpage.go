package ledger

import (
	"context"
	"fmt"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger/translog"
)

// RunsBefore hands fn the runs stored before cursor (a run's rowid; 0
// starts from the newest), newest first, only deployment's when it is
// not "", one row at a time, until fn returns false or max rows were
// read. It returns the cursor of the last row read (0 when none was) and
// how many were read. It reads through the rowid and, with a deployment,
// the runs' (deployment, request_id) index: a page costs the rows it
// reads, not the host's history (the run history's page, issue 38).
func (l *Ledger) RunsBefore(ctx context.Context, deployment string, cursor int64, max int, fn func(cursor int64, row *RunRow) (more bool, err error)) (last int64, read int, err error) {
	if cursor <= 0 {
		cursor = 1 << 62
	}
	query := `SELECT rowid, ` + runColumns + ` FROM runs WHERE rowid < ? ORDER BY rowid DESC LIMIT ?`
	args := []any{cursor, max}
	if deployment != "" {
		query = `SELECT rowid, ` + runColumns + ` FROM runs WHERE rowid < ? AND deployment = ? ORDER BY rowid DESC LIMIT ?`
		args = []any{cursor, deployment, max}
	}
	rows, err := l.db.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("store: read runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r RunRow
		if err := rows.Scan(&last, &r.RunID, &r.Deployment, &r.RequestID, &r.State); err != nil {
			return 0, read, fmt.Errorf("store: read runs: %w", err)
		}
		r.State = store.Unpack(r.State)
		read++
		more, err := fn(last, &r)
		if err != nil || !more {
			return last, read, err
		}
	}
	return last, read, rows.Err()
}

// AttentionOfRun returns the attention items of one run, oldest first,
// read through the items' run index.
func (l *Ledger) AttentionOfRun(ctx context.Context, runID string) ([]AttentionRow, error) {
	out, err := store.Select(ctx, l.db, func(r store.Row, a *AttentionRow) error { return r.Scan(&a.ID, &a.RunID, &a.State) },
		`SELECT id, run_id, state FROM attention WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: read attention items: %w", err)
	}
	return out, nil
}

// RunReceipt is whether one run's receipt verifies, as the run history
// shows it: the receipt the run's record names (Digest) is the run's
// last stored receipt, its signature verifies with a receipt key the
// host key pinned, and it is leaf Index of the host's transparency log
// under the log's newest signed checkpoint (of Size leaves). Code names
// the first check that failed ("" when every one held).
type RunReceipt struct {
	Digest string        `json:"digest"`
	Seq    int64         `json:"seq,omitempty"`
	Index  int64         `json:"index,omitempty"`
	Size   int64         `json:"size,omitempty"`
	Code   blocking.Code `json:"code,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// OK reports whether every check held.
func (r *RunReceipt) OK() bool { return r.Code == "" }

// ReceiptChecker checks runs' receipts one at a time (VerifyRunReceipt),
// with the host's pinned receipt keys and log key read once.
type ReceiptChecker struct {
	l    *Ledger
	pins PinnedKeys
	log  translog.Policy
}

// ReceiptChecker reads what VerifyRunReceipt checks with: the receipt
// keys the host key pinned and the host's log key.
func (l *Ledger) ReceiptChecker(ctx context.Context) (*ReceiptChecker, error) {
	pins, err := l.ReceiptKeyPins(ctx)
	if err != nil {
		return nil, err
	}
	key, err := l.LogKey()
	if err != nil {
		return nil, err
	}
	return &ReceiptChecker{l: l, pins: pins, log: translog.Policy{Log: key.Verifier()}}, nil
}

// VerifyRunReceipt checks the receipt of run runID whose (MAC-checked)
// record names digest: the same checks the chain check makes of one
// receipt (its bytes hash to the digest, its signature verifies with a
// pinned receipt key) and the inclusion proof `oa receipts prove` writes,
// verified as `oa receipts verify-proof` verifies it. Its cost is one
// receipt and one proof, whatever the history holds; the links between
// receipts are the chain check's (VerifyReceiptsWith).
func (c *ReceiptChecker) VerifyRunReceipt(ctx context.Context, runID, digest string) (*RunReceipt, error) {
	out := &RunReceipt{Digest: digest}
	row, err := c.l.Tables().LastReceiptOf(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		out.Code, out.Detail = blocking.ReceiptRunsDisagree, "the run names a receipt the store does not hold"
		return out, nil
	}
	out.Seq = row.Seq
	if ir.DigestBytes(row.Record) != digest {
		out.Code, out.Detail = blocking.ReceiptRunsDisagree, fmt.Sprintf("receipt #%d is not the receipt the run names", row.Seq)
		return out, nil
	}
	signed := false
	for _, v := range c.pins {
		if v.VerifyBytes(row.Signature, row.Record) == nil {
			signed = true
			break
		}
	}
	if !signed {
		out.Code, out.Detail = blocking.ReceiptChainBroken, fmt.Sprintf("receipt #%d's signature does not verify with a pinned receipt key", row.Seq)
		return out, nil
	}
	proof, err := c.l.ProveReceipt(ctx, digest)
	if err == nil {
		var v *translog.Verified
		if v, err = translog.VerifyProof(proof.Marshal(), c.log, []byte(digest)); err == nil {
			out.Index, out.Size = v.Index, v.Size
			return out, nil
		}
	}
	r := blocking.Refusals(err)
	if r == nil {
		return nil, err
	}
	out.Code, out.Detail = r[0].Code, r[0].Detail
	return out, nil
}
