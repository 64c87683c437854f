package ledger_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// Issue 26: receipts verify starts from the head the last verify reached,
// recorded with the host MAC; what was sealed since is checked in full,
// and what it relies on (the receipt it ended at, the heads, the counts)
// is checked again.
func TestReceiptsVerifyIsIncremental(t *testing.T) {
	ctx := context.Background()
	s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	s.Run(t, "r-1", "AB-1234")
	s.Run(t, "r-2", "CD-5678")
	verify := func(full bool) *ledger.ChainReport {
		t.Helper()
		r, err := ledger.Open(s.H).VerifyReceiptsWith(ctx, ledger.VerifyOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := verify(false); !r.OK || r.Incremental || r.Verified != 2 {
		t.Fatalf("first verify (no mark): %+v", r)
	}
	s.Run(t, "r-3", "EF-0001")
	if r := verify(false); !r.OK || !r.Incremental || r.Verified != 1 || r.Receipts != 3 {
		t.Fatalf("second verify: %+v", r)
	}
	if r := verify(true); !r.OK || r.Incremental || r.Verified != 3 {
		t.Fatalf("full verify: %+v", r)
	}
	// A mark edited by hand is not the host's: the verify is full.
	mark := filepath.Join(s.Home, ledger.VerifiedFile)
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mark, []byte(strings.Replace(string(b), `"seq":3`, `"seq":2`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := verify(false); !r.OK || r.Incremental {
		t.Fatalf("verify with an edited mark: %+v", r)
	}
	// A receipt before the mark edited in place is found without its
	// signature being verified again: it no longer hashes to the digest
	// the next receipt links to.
	db := coordtest.RawDB(t, s.Home)
	var first []byte
	if err := db.QueryRow(`SELECT record FROM receipts WHERE seq = 1`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	coordtest.EditReceipt(t, db, 1, "oa.receipt/v1", "oa.receipt/v9")
	if r := verify(false); r.OK || r.Code != blocking.ReceiptChainBroken || r.FirstBroken != 1 || !r.Incremental {
		t.Fatalf("verify after an old receipt was edited: %+v", r)
	}
	coordtest.Exec(t, db, `UPDATE receipts SET record = ? WHERE seq = 1`, first)
	// The receipt the mark ends at edited, or the newest removed: named.
	coordtest.EditReceipt(t, db, 3, "oa.receipt/v1", "oa.receipt/v9")
	if r := verify(false); r.OK || r.Code != blocking.ReceiptChainBroken || r.FirstBroken != 3 {
		t.Fatalf("verify after the marked receipt was edited: %+v", r)
	}
	coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = 3`)
	if r := verify(false); r.OK || r.Code != blocking.ReceiptCheckpointMismatch {
		t.Fatalf("verify after the newest receipt was removed: %+v", r)
	}
}

// A mark further behind the head than an incremental verify holds in
// memory is verified in full, which streams: what was added since the
// mark is never held whole, however much it is.
func TestReceiptsVerifyFarBehindIsFull(t *testing.T) {
	ctx := context.Background()
	s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	s.Run(t, "r-1", "AB-1234")
	verify := func() *ledger.ChainReport {
		t.Helper()
		r, err := ledger.Open(s.H).VerifyReceiptsWith(ctx, ledger.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := verify(); !r.OK || r.Incremental {
		t.Fatalf("first verify (no mark): %+v", r)
	}
	defer ledger.SetMaxIncremental(1)()
	s.Run(t, "r-2", "CD-5678")
	if r := verify(); !r.OK || !r.Incremental || r.Verified != 1 {
		t.Fatalf("one receipt and one run since the mark, at most 1 held: %+v", r)
	}
	s.Run(t, "r-3", "EF-0001")
	s.Run(t, "r-4", "GH-0002")
	if r := verify(); !r.OK || r.Incremental || r.Verified != 4 {
		t.Fatalf("two receipts since the mark, at most 1 held: %+v", r)
	}
}
