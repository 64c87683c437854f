package ledger

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
)

// ListedReceipt is one receipt as `oa receipts list` shows it: the digest
// of its exact signed bytes and the record they decode to.
type ListedReceipt struct {
	Digest string  `json:"digest"`
	Record Receipt `json:"record"`
}

// EachReceipt hands the host's receipts to fn in chain order, one at a
// time, read from one snapshot of the store: its memory stays bounded
// however many receipts the host holds (a host with a million runs holds
// a gigabyte of them). It verifies nothing (VerifyReceipts does). Every
// row is read as a receipt record before fn sees the first, so a row that
// is not one refuses receipt_chain_broken, naming its sequence number,
// with nothing handed over: the rows are read twice rather than held.
func (l *Ledger) EachReceipt(ctx context.Context, fn func(ListedReceipt) error) error {
	return l.db.Snapshot(ctx, func(tx *sql.Tx) error {
		if err := eachReceiptIn(ctx, tx, func(ListedReceipt) error { return nil }); err != nil {
			return err
		}
		return eachReceiptIn(ctx, tx, fn)
	})
}

// eachReceiptIn decodes the receipts tx holds, in chain order, and hands
// each to fn.
func eachReceiptIn(ctx context.Context, tx *sql.Tx, fn func(ListedReceipt) error) error {
	return store.Each(ctx, tx, scanReceipt, func(row *ReceiptRow) error {
		var rec Receipt
		if err := json.Unmarshal(row.Record, &rec); err != nil {
			return blocking.New(blocking.ReceiptChainBroken, "receipt #%d is not a receipt record", row.Seq)
		}
		return fn(ListedReceipt{ir.DigestBytes(row.Record), rec})
	}, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`)
}

// ListReceipts is EachReceipt's receipts in one list, for a host whose
// history fits in memory (tests, a few thousand runs); `oa receipts list`
// streams them instead.
func (l *Ledger) ListReceipts(ctx context.Context) ([]ListedReceipt, error) {
	list := []ListedReceipt{}
	err := l.EachReceipt(ctx, func(r ListedReceipt) error {
		list = append(list, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}
