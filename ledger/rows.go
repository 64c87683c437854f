package ledger

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/oa-dev/oa/internal/store"
)

// The rows of the tables the ledger owns, as its typed store reads and
// writes them and an audit bundle carries them byte for byte (the bundle
// encodes these structs as they are: their field names and order are the
// bundle's format).

// RunRow is one stored run of the coordinator: its keys and its state
// document.
type RunRow struct {
	RunID      string
	Deployment string
	RequestID  string
	// State is the run's state document, unpacked (see store.Pack).
	State []byte
}

// AttentionRow is one stored attention item of the coordinator.
type AttentionRow struct {
	ID    string
	RunID string
	State []byte
}

// ReceiptRow is one stored receipt of the coordinator's chain.
type ReceiptRow struct {
	Seq        int64
	RunID      string
	Attempt    int
	PrevDigest string
	// Record is the signed record, unpacked (see store.Pack): byte for
	// byte what was signed.
	Record    []byte
	Signature []byte
}

// The columns of each row type, in the order its scan reads them: every
// read of the table selects the same columns and reads them with the
// same function. ReceiptColumns is exported for the test kit, which
// writes long histories straight into the table.
const (
	runColumns = `run_id, deployment, request_id, state`
	// ReceiptColumns are the receipts table's columns a ReceiptRow holds,
	// in scanReceipt's order.
	ReceiptColumns = `seq, run_id, attempt, prev_digest, record, signature`
)

// scanRun scans one row of runColumns.
func scanRun(r store.Row, v *RunRow) error {
	if err := r.Scan(&v.RunID, &v.Deployment, &v.RequestID, &v.State); err != nil {
		return err
	}
	v.State = store.Unpack(v.State)
	return nil
}

// scanReceipt scans one row of ReceiptColumns.
func scanReceipt(r store.Row, v *ReceiptRow) error {
	if err := r.Scan(&v.Seq, &v.RunID, &v.Attempt, &v.PrevDigest, &v.Record, &v.Signature); err != nil {
		return err
	}
	v.Record = store.Unpack(v.Record)
	return nil
}

// EachRunIn hands every run, in the order they were stored, to fn, one
// at a time, as tx sees the table: how an audit bundle copies the runs
// inside the one read transaction it copies every table in.
func EachRunIn(ctx context.Context, tx *sql.Tx, fn func(*RunRow) error) error {
	if err := store.Each(ctx, tx, scanRun, fn, `SELECT `+runColumns+` FROM runs ORDER BY rowid`); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	return nil
}

// EachReceiptIn hands every receipt, in chain order, to fn, one at a
// time, as tx sees the table (see EachRunIn).
func EachReceiptIn(ctx context.Context, tx *sql.Tx, fn func(*ReceiptRow) error) error {
	if err := store.Each(ctx, tx, scanReceipt, fn, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`); err != nil {
		return fmt.Errorf("store: dump: %w", err)
	}
	return nil
}

// RestoreIn writes runs and receipts, a row at a time and every row as it
// is, into the empty runs and receipts tables in tx: an audit bundle's
// copy rebuilt (nothing is judged here: the ledger's checks judge the
// rows once the host opens). It refuses tables that hold any row.
func RestoreIn(ctx context.Context, tx *sql.Tx, runs store.RowSource[RunRow], receipts store.RowSource[ReceiptRow]) error {
	if err := store.RequireEmpty(ctx, tx, "runs", "receipts"); err != nil {
		return err
	}
	err := store.InsertEach(ctx, tx, `INSERT INTO runs (run_id, deployment, request_id, state) VALUES (?, ?, ?, ?)`, runs, func(r *RunRow) ([]any, string) {
		return []any{r.RunID, r.Deployment, r.RequestID, r.State}, "run"
	})
	if err != nil {
		return err
	}
	return store.InsertEach(ctx, tx, `INSERT INTO receipts (seq, run_id, attempt, prev_digest, record, signature) VALUES (?, ?, ?, ?, ?, ?)`, receipts, func(r *ReceiptRow) ([]any, string) {
		return []any{r.Seq, r.RunID, r.Attempt, r.PrevDigest, r.Record, r.Signature}, fmt.Sprintf("receipt #%d", r.Seq)
	})
}
