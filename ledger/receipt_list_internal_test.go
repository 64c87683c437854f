package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
)

// TestEachReceiptRefusesBeforeHandingAny: receipts are handed over in
// chain order, one at a time; a row that is not a receipt record refuses
// receipt_chain_broken naming it, and then not one receipt was handed
// over, wherever in the chain the row is.
func TestEachReceiptRefusesBeforeHandingAny(t *testing.T) {
	ctx := context.Background()
	h := hosttest.New(t, nil).Open()
	s := StoreOf(h)
	insert := func(seq int, record string) {
		t.Helper()
		if err := s.db.Write(ctx, "insert receipt", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO receipts (seq, run_id, attempt, prev_digest, record, signature, deployment, request_id) VALUES (?, ?, 1, '', ?, x'00', 'd', ?)`,
				seq, fmt.Sprint("run-", seq), []byte(record), fmt.Sprint("req-", seq))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := 1; seq <= 3; seq++ {
		insert(seq, fmt.Sprintf(`{"type":%q,"seq":%d,"runId":"run-%d"}`, ReceiptType, seq, seq))
	}
	var seen []int64
	if err := EachReceipt(ctx, h, func(r ListedReceipt) error { seen = append(seen, r.Record.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("receipts handed over: %v, want 1 2 3 in chain order", seen)
	}
	insert(4, `not a receipt`)
	handed := 0
	err := EachReceipt(ctx, h, func(ListedReceipt) error { handed++; return nil })
	var why *blocking.Error
	if !errors.As(err, &why) || why.Code != blocking.ReceiptChainBroken || why.Detail != "receipt #4 is not a receipt record" {
		t.Fatalf("a row that is not a receipt: %v", err)
	}
	if handed != 0 {
		t.Fatalf("%d receipts were handed over before the refusal", handed)
	}
}
