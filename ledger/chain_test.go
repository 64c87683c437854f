package ledger_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// historyRuns is more runs than the chain check holds at once, so every
// check below crosses its batches.
const historyRuns = 2600

// longHistory is a served host with one real run and historyRuns more
// built in bulk, every one with its receipt.
func longHistory(t *testing.T) *coordtest.Served {
	t.Helper()
	s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	s.Run(t, "first", "AB-1234")
	if err := coordtest.BuildHistory(context.Background(), s.Home, "clinic", historyRuns); err != nil {
		t.Fatal(err)
	}
	return s
}

// auditChain is CheckChain as `oa audit verify` calls it: no run MAC key.
func auditChain(t *testing.T, s *coordtest.Served) *ledger.ChainReport {
	t.Helper()
	pub, err := os.ReadFile(filepath.Join(s.Home, ledger.ReceiptPubFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(s.Home, ledger.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ledger.Open(s.H).CheckChain(context.Background(), ledger.ChainInputs{ReceiptKey: key, CheckpointFile: file})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// editRunState rewrites the state of the run of receipt seq with edit
// (its JSON as a map) and returns the run id and a function that puts
// the row back.
func editRunState(t *testing.T, db *sql.DB, seq int, edit func(map[string]any)) (string, func()) {
	t.Helper()
	var runID string
	var state []byte
	if err := db.QueryRow(`SELECT r.run_id, r.state FROM runs r JOIN receipts c ON c.run_id = r.run_id WHERE c.seq = ?`, seq).Scan(&runID, &state); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(store.Unpack(state), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	edited, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	newID, _ := m["run_id"].(string)
	coordtest.Exec(t, db, `UPDATE runs SET run_id = ?, state = ? WHERE run_id = ?`, newID, edited, runID)
	return runID, func() {
		coordtest.Exec(t, db, `UPDATE runs SET run_id = ?, state = ? WHERE run_id = ?`, runID, state, newID)
	}
}

// The chain check streams the history a batch at a time; each break is
// still found, in any batch, and named as the whole-history check named
// it.
func TestChainCheckAcrossBatches(t *testing.T) {
	s := longHistory(t)
	const total = historyRuns + 1
	r, code := coordtest.VerifyCode(t, s.H)
	if !r.OK || r.Receipts != total || r.Runs != total || r.Checkpoint == nil || r.Checkpoint.Seq != total {
		t.Fatalf("whole history: %+v (%s)", r, code)
	}
	if r := auditChain(t, s); !r.OK || r.Receipts != total || r.Runs != total {
		t.Fatalf("whole history, as an auditor: %+v", r)
	}
	db := coordtest.RawDB(t, s.Home)

	// Rows as a database from before packing holds them (plain JSON)
	// verify beside packed ones: the first run's and the 1,000th's (and
	// their receipts, stored plain, written back as they are).
	for _, seq := range []int{1, 1000} {
		var runID string
		var record, state []byte
		if err := db.QueryRow(`SELECT c.record, r.run_id, r.state FROM receipts c JOIN runs r ON r.run_id = c.run_id WHERE c.seq = ?`, seq).Scan(&record, &runID, &state); err != nil {
			t.Fatal(err)
		}
		if state[0] == '{' {
			t.Fatalf("the run of receipt #%d is not stored packed", seq)
		}
		coordtest.Exec(t, db, `UPDATE receipts SET record = ? WHERE seq = ?`, store.Unpack(record), seq)
		coordtest.Exec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, store.Unpack(state), runID)
	}
	if r, code := coordtest.VerifyCode(t, s.H); !r.OK || r.Receipts != total {
		t.Fatalf("plain rows among packed ones: %+v (%s)", r, code)
	}

	// A receipt edited in the third batch: its signature fails there.
	var record []byte
	if err := db.QueryRow(`SELECT record FROM receipts WHERE seq = 2100`).Scan(&record); err != nil {
		t.Fatal(err)
	}
	coordtest.EditReceipt(t, db, 2100, "append_triage_note", "append_triage_NOTE")
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptChainBroken || r.FirstBroken != 2100 {
		t.Fatalf("edited receipt: %+v", r)
	}
	coordtest.Exec(t, db, `UPDATE receipts SET record = ? WHERE seq = 2100`, record)
	// A run's packed state edited in its bytes: it no longer unpacks to
	// what the host MACed.
	var runID string
	var state []byte
	if err := db.QueryRow(`SELECT r.run_id, r.state FROM runs r JOIN receipts c ON c.run_id = r.run_id WHERE c.seq = 2200`).Scan(&runID, &state); err != nil {
		t.Fatal(err)
	}
	if state[0] != 0x01 {
		t.Fatalf("run %s is not stored packed: %q", runID, state[:1])
	}
	flipped := bytes.Clone(state)
	flipped[len(flipped)/2] ^= 0x10
	coordtest.Exec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, flipped, runID)
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.RunRecordTampered || !strings.Contains(r.Problem, runID) {
		t.Fatalf("packed run state edited: %+v", r)
	}
	coordtest.Exec(t, db, `UPDATE runs SET state = ? WHERE run_id = ?`, state, runID)

	// A receipt removed from the second batch: the gap is named.
	coordtest.Exec(t, db, `CREATE TABLE kept AS SELECT * FROM receipts WHERE seq = 1500`)
	coordtest.Exec(t, db, `DELETE FROM receipts WHERE seq = 1500`)
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.ReceiptChainBroken || r.FirstBroken != 1500 || !strings.Contains(r.Problem, "missing") {
		t.Fatalf("removed receipt: %+v", r)
	}
	coordtest.Exec(t, db, `INSERT INTO receipts SELECT * FROM kept`)
	coordtest.Exec(t, db, `DROP TABLE kept`)
	if r, _ := coordtest.VerifyCode(t, s.H); !r.OK {
		t.Fatalf("restored: %+v", r)
	}

	// A run edited in place (the host's MAC no longer holds) is named by
	// its id.
	runID, undo := editRunState(t, db, 2500, func(m map[string]any) { m["outcome"] = "failed" })
	if r, code := coordtest.VerifyCode(t, s.H); code != blocking.RunRecordTampered || !strings.Contains(r.Problem, runID) {
		t.Fatalf("edited run: %+v", r)
	}
	// Without the MAC (an auditor), the run no longer agrees with the
	// receipt it names.
	if r := auditChain(t, s); r.Code != blocking.ReceiptRunsDisagree || r.FirstBroken != 0 || !strings.Contains(r.Problem, runID) {
		t.Fatalf("edited run, as an auditor: %+v", r)
	}
	undo()

	// A run replaced by another run id that names no receipt: the
	// receipt of the run that is gone is named by its number.
	_, undo = editRunState(t, db, 1800, func(m map[string]any) { m["run_id"] = "run-zzzz-replaced"; delete(m, "receipt_digest") })
	if r := auditChain(t, s); r.Code != blocking.ReceiptRunsDisagree || r.FirstBroken != 1800 {
		t.Fatalf("receipt without its run: %+v", r)
	}
	// With a run that disagrees too, the run is named first, as the
	// check always ordered them.
	runID, undo2 := editRunState(t, db, 2300, func(m map[string]any) { m["reason"] = "other" })
	if r := auditChain(t, s); r.Code != blocking.ReceiptRunsDisagree || r.FirstBroken != 0 || !strings.Contains(r.Problem, runID) {
		t.Fatalf("run and receipt both broken: %+v", r)
	}
	undo2()
	undo()
	if r, _ := coordtest.VerifyCode(t, s.H); !r.OK {
		t.Fatalf("restored: %+v", r)
	}
}
