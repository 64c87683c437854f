package ledger_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

func TestReceiptDeletedLastOrAllIsDetected(t *testing.T) {
	cases := map[string]func(t *testing.T, db *sql.DB){
		"last receipt": func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = 3`)
		},
		"last receipt and its checkpoint": func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = 3`)
			coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint' AND seq = 3`)
		},
		"every receipt and checkpoint": func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM receipts`)
			coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint'`)
		},
		"emptied database": func(t *testing.T, db *sql.DB) {
			coordtest.Exec(t, db, `DELETE FROM receipts`)
			coordtest.Exec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint'`)
			coordtest.Exec(t, db, `DELETE FROM attention`)
			coordtest.Exec(t, db, `DELETE FROM runs`)
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
			for _, rec := range []string{"AB-1234", "CD-5678", "OF-0001"} {
				s.Run(t, "r-"+rec, rec)
			}
			if r, code := coordtest.VerifyCode(t, s.H); !r.OK || r.Receipts != 3 || r.Checkpoint == nil || r.Checkpoint.Seq != 3 || r.Checkpoint.Runs != 3 {
				t.Fatalf("before: %+v (%s)", r, code)
			}
			tamper(t, coordtest.RawDB(t, s.Home))
			if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptCheckpointMismatch {
				t.Fatalf("after: %+v, want receipt_checkpoint_mismatch", r)
			}
			before := coordtest.ReceiptCount(t, s.H)
			// A new run must not extend the truncated chain, nor make its
			// change: it is refused before it starts.
			if res := s.Run(t, "after", "EF-0001"); res.Reason != contract.ReasonHostRecordsDisagree || coordtest.Notes(t, s.Home, "EF-0001") != 0 {
				t.Fatalf("a run after truncation: %+v", res)
			}
			if n := coordtest.ReceiptCount(t, s.H); n != before {
				t.Fatalf("the truncated chain was extended: %d receipts, had %d", n, before)
			}
		})
	}
}

func TestReceiptReorderedSwappedOrUnpinnedIsNamed(t *testing.T) {
	s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	for _, rec := range []string{"AB-1234", "CD-5678"} {
		s.Run(t, "r-"+rec, rec)
	}
	db := coordtest.RawDB(t, s.Home)
	// Reorder: the two records trade places.
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 100 WHERE seq = 1`)
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 1 WHERE seq = 2`)
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 2 WHERE seq = 100`)
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptChainBroken || r.FirstBroken != 1 {
		t.Fatalf("reordered: %+v", r)
	}
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 100 WHERE seq = 1`)
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 1 WHERE seq = 2`)
	coordtest.Exec(t, db, `UPDATE receipts SET seq = 2 WHERE seq = 100`)
	if r, _ := coordtest.VerifyCode(t, s.H); !r.OK {
		t.Fatalf("restored: %+v", r)
	}
	// A receipt key from the folder it protects is not trusted: another
	// key in keys/receipt.pub is refused by the pinned key id.
	other, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(s.Home, ledger.ReceiptPubFile)
	saved, _ := os.ReadFile(pub)
	if err := os.WriteFile(pub, other.Public, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptKeyUnpinned {
		t.Fatalf("other receipt key: %+v", r)
	}
	os.WriteFile(pub, saved, 0o644)
	// A binding edited (its signature no longer verifies): the receipts
	// name no binding that verifies.
	coordtest.Exec(t, db, `UPDATE versions SET record = CAST(replace(CAST(record AS TEXT), 'Dr Ada', 'Dr Eve') AS BLOB) WHERE kind = 'binding'`)
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptBindingUnverified || r.FirstBroken != 1 {
		t.Fatalf("edited binding: %+v", r)
	}
}
