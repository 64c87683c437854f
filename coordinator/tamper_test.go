package coordinator_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/resolve"
)

// rawDB opens the host's SQLite file directly, the way someone editing it
// behind the coordinator's back would, with the append-only triggers
// dropped.
func rawDB(t *testing.T, home string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, host.StateFile)+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, trig := range []string{"receipts_no_update", "receipts_no_delete", "versions_no_update", "versions_no_delete"} {
		sqlExec(t, db, "DROP TRIGGER IF EXISTS "+trig)
	}
	return db
}

func sqlExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// editReceipt replaces old with new in receipt seq's record, as someone
// editing the database would: the record unpacked, edited and written
// back plain.
func editReceipt(t *testing.T, db *sql.DB, seq int, old, new string) {
	t.Helper()
	var record []byte
	if err := db.QueryRow(`SELECT record FROM receipts WHERE seq = ?`, seq).Scan(&record); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(store.Unpack(record)), old, new, 1)
	if edited == string(store.Unpack(record)) {
		t.Fatalf("receipt #%d holds no %q", seq, old)
	}
	sqlExec(t, db, `UPDATE receipts SET record = ? WHERE seq = ?`, []byte(edited), seq)
}

func verifyCode(t *testing.T, s *served) (*ledger.ChainReport, blocking.Code) {
	t.Helper()
	r, err := ledger.VerifyReceipts(context.Background(), s.host)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != (r.Err() == nil) {
		t.Fatalf("report and its error disagree: %+v", r)
	}
	return r, r.Code
}

func receiptCount(t *testing.T, s *served) int {
	t.Helper()
	dump, err := s.host.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(dump.Receipts)
}

func TestReceiptTamperedRunIsRefusedNotRetried(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	first := s.run(t, "once", "AB-1234")
	if first.Reason != contract.ReasonVerified || first.Proof != contract.ProofSealed {
		t.Fatalf("first: %+v", first)
	}
	db := rawDB(t, s.Home)
	var state []byte
	if err := db.QueryRow(`SELECT state FROM runs WHERE run_id = ?`, first.RunID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(store.Unpack(state), &doc); err != nil {
		t.Fatal(err)
	}
	doc["outcome"], doc["reason"] = "did_not_run", "app_offline"
	edited, _ := json.Marshal(doc)
	sqlExec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, edited, first.RunID)

	again := s.run(t, "once", "AB-1234")
	if again.Reason != contract.ReasonRunRecordTampered || again.SafeToRetry || again.Attempt != 0 || again.ReceiptDigest != "" {
		t.Fatalf("replay of a tampered run: %+v", again)
	}
	if notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234"); len(notes) != 1 {
		t.Fatalf("a tampered run was attempted again: %d notes", len(notes))
	}
	if n := receiptCount(t, s); n != 1 {
		t.Fatalf("%d receipts after the refused replay, want 1", n)
	}
	if _, err := s.c.GetRun(context.Background(), first.RunID, 0); err != nil {
		t.Fatal(err)
	} else if res, _ := s.c.GetRun(context.Background(), first.RunID, 0); res.Reason != contract.ReasonRunRecordTampered {
		t.Fatalf("get_run of a tampered run: %+v", res)
	}
	if _, code := verifyCode(t, s); code != blocking.RunRecordTampered {
		t.Fatalf("receipts verify: %s, want run_record_tampered", code)
	}
}

func TestReceiptRunRolledBackToEarlierStateIsRefused(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	db := rawDB(t, s.Home)
	first := s.run(t, "off", "OF-0003")
	var attempt1 []byte
	if err := db.QueryRow(`SELECT state FROM runs WHERE run_id = ?`, first.RunID).Scan(&attempt1); err != nil {
		t.Fatal(err)
	}
	second := s.run(t, "off", "OF-0003")
	if second.Attempt != 2 {
		t.Fatalf("retry: %+v", second)
	}
	// The first attempt's state carries a valid MAC, but the chain holds a
	// receipt of attempt 2: putting it back must not buy a third attempt.
	sqlExec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, attempt1, first.RunID)
	if res := s.run(t, "off", "OF-0003"); res.Reason != contract.ReasonRunRecordTampered {
		t.Fatalf("rolled-back run: %+v", res)
	}
	if n := receiptCount(t, s); n != 2 {
		t.Fatalf("%d receipts, want 2", n)
	}
}

func TestReceiptDeletedLastOrAllIsDetected(t *testing.T) {
	cases := map[string]func(t *testing.T, db *sql.DB){
		"last receipt": func(t *testing.T, db *sql.DB) {
			sqlExec(t, db, `DELETE FROM receipts WHERE seq = 3`)
		},
		"last receipt and its checkpoint": func(t *testing.T, db *sql.DB) {
			sqlExec(t, db, `DELETE FROM receipts WHERE seq = 3`)
			sqlExec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint' AND seq = 3`)
		},
		"every receipt and checkpoint": func(t *testing.T, db *sql.DB) {
			sqlExec(t, db, `DELETE FROM receipts`)
			sqlExec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint'`)
		},
		"emptied database": func(t *testing.T, db *sql.DB) {
			sqlExec(t, db, `DELETE FROM receipts`)
			sqlExec(t, db, `DELETE FROM versions WHERE kind = 'checkpoint'`)
			sqlExec(t, db, `DELETE FROM attention`)
			sqlExec(t, db, `DELETE FROM runs`)
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			s := serve(t, resolve.StarterRegistry(hosttest.Name))
			for _, rec := range []string{"AB-1234", "CD-5678", "OF-0001"} {
				s.run(t, "r-"+rec, rec)
			}
			if r, code := verifyCode(t, s); !r.OK || r.Receipts != 3 || r.Checkpoint == nil || r.Checkpoint.Seq != 3 || r.Checkpoint.Runs != 3 {
				t.Fatalf("before: %+v (%s)", r, code)
			}
			tamper(t, rawDB(t, s.Home))
			if r, code := verifyCode(t, s); code != blocking.ReceiptCheckpointMismatch {
				t.Fatalf("after: %+v, want receipt_checkpoint_mismatch", r)
			}
			before := receiptCount(t, s)
			// A new run must not extend the truncated chain, nor make its
			// change: it is refused before it starts.
			if res := s.run(t, "after", "EF-0001"); res.Reason != contract.ReasonHostRecordsDisagree || notesOf(t, s, "EF-0001") != 0 {
				t.Fatalf("a run after truncation: %+v", res)
			}
			if n := receiptCount(t, s); n != before {
				t.Fatalf("the truncated chain was extended: %d receipts, had %d", n, before)
			}
		})
	}
}

func TestReceiptReorderedSwappedOrUnpinnedIsNamed(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	for _, rec := range []string{"AB-1234", "CD-5678"} {
		s.run(t, "r-"+rec, rec)
	}
	db := rawDB(t, s.Home)
	// Reorder: the two records trade places.
	sqlExec(t, db, `UPDATE receipts SET seq = 100 WHERE seq = 1`)
	sqlExec(t, db, `UPDATE receipts SET seq = 1 WHERE seq = 2`)
	sqlExec(t, db, `UPDATE receipts SET seq = 2 WHERE seq = 100`)
	if r, code := verifyCode(t, s); code != blocking.ReceiptChainBroken || r.FirstBroken != 1 {
		t.Fatalf("reordered: %+v", r)
	}
	sqlExec(t, db, `UPDATE receipts SET seq = 100 WHERE seq = 1`)
	sqlExec(t, db, `UPDATE receipts SET seq = 1 WHERE seq = 2`)
	sqlExec(t, db, `UPDATE receipts SET seq = 2 WHERE seq = 100`)
	if r, _ := verifyCode(t, s); !r.OK {
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
	if r, code := verifyCode(t, s); code != blocking.ReceiptKeyUnpinned {
		t.Fatalf("other receipt key: %+v", r)
	}
	os.WriteFile(pub, saved, 0o644)
	// A binding edited (its signature no longer verifies): the receipts
	// name no binding that verifies.
	sqlExec(t, db, `UPDATE versions SET record = CAST(replace(CAST(record AS TEXT), 'Dr Ada', 'Dr Eve') AS BLOB) WHERE kind = 'binding'`)
	if r, code := verifyCode(t, s); code != blocking.ReceiptBindingUnverified || r.FirstBroken != 1 {
		t.Fatalf("edited binding: %+v", r)
	}
}
