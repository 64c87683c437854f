package ledger

import (
	"context"
	"encoding/json"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
)

// ListedReceipt is one receipt as `oa receipts list` shows it: the digest
// of its exact signed bytes and the record they decode to.
type ListedReceipt struct {
	Digest string  `json:"digest"`
	Record Receipt `json:"record"`
}

// ListReceipts decodes the host's receipts in chain order. It verifies
// nothing (VerifyReceipts does); a row that is not a receipt record
// refuses receipt_chain_broken naming its sequence number.
func ListReceipts(ctx context.Context, h *host.Host) ([]ListedReceipt, error) {
	rows, err := StoreOf(h).Receipts(ctx)
	if err != nil {
		return nil, err
	}
	list := []ListedReceipt{}
	for _, row := range rows {
		var rec Receipt
		if err := json.Unmarshal(row.Record, &rec); err != nil {
			return nil, blocking.New(blocking.ReceiptChainBroken, "receipt #%d is not a receipt record", row.Seq)
		}
		list = append(list, ListedReceipt{ir.DigestBytes(row.Record), rec})
	}
	return list, nil
}
