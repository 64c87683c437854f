package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// logHoldsChain fails t unless the host's log holds exactly the chain:
// leaf i is receipt i+1's digest for every receipt, no leaf more, and the
// newest checkpoint is of that size, signed with the host's log key. It
// returns the number of receipts.
func logHoldsChain(t *testing.T, h *host.Host, db *sql.DB) int {
	t.Helper()
	rows, err := db.Query(`SELECT r.seq, r.record, l.entry FROM receipts r LEFT JOIN log_leaves l ON l.idx = r.seq - 1 ORDER BY r.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var seq int
		var record, leaf []byte
		if err := rows.Scan(&seq, &record, &leaf); err != nil {
			t.Fatal(err)
		}
		if string(leaf) != ir.DigestBytes(record) {
			t.Fatalf("receipt #%d's leaf is %q, want its digest", seq, leaf)
		}
		n++
	}
	var leaves int
	if err := db.QueryRow(`SELECT COUNT(*) FROM log_leaves`).Scan(&leaves); err != nil || leaves != n {
		t.Fatalf("the log holds %d leaves for %d receipts (%v)", leaves, n, err)
	}
	head, err := ledger.Open(h).LogHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return 0
	}
	key, err := ledger.Open(h).LogKey()
	if err != nil {
		t.Fatal(err)
	}
	if head == nil || head.N != int64(n) {
		t.Fatalf("the log's head is %+v for %d receipts", head, n)
	}
	if _, err := note.Open(head.Note, note.VerifierList(key.Verifier())); err != nil {
		t.Fatalf("the head checkpoint does not verify with the log key: %v", err)
	}
	return n
}

// TestEveryReceiptIsALeafWithAProof: each sealed receipt is its leaf of
// the host's log, and `oa receipts prove`'s proof of each verifies
// offline with the host's log key alone.
func TestEveryReceiptIsALeafWithAProof(t *testing.T) {
	ctx := context.Background()
	d := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	for i := range 4 {
		d.Run(t, fmt.Sprint("req-", i), "AB-1234")
	}
	db := coordtest.RawDB(t, d.Home)
	if n := logHoldsChain(t, d.H, db); n != 4 {
		t.Fatalf("%d receipts", n)
	}
	key, err := ledger.Open(d.H).LogKey()
	if err != nil || key.Origin() != "oa/"+d.H.Policy.Host {
		t.Fatalf("log key %v, %v", key, err)
	}
	rows, err := db.Query(`SELECT record FROM receipts ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := int64(0); rows.Next(); i++ {
		var record []byte
		if err := rows.Scan(&record); err != nil {
			t.Fatal(err)
		}
		p, err := ledger.Open(d.H).ProveReceipt(ctx, ir.DigestBytes(record))
		if err != nil {
			t.Fatal(err)
		}
		v, err := translog.VerifyProof(p.Marshal(), translog.Policy{Log: key.Verifier()}, []byte(ir.DigestBytes(record)))
		if err != nil || v.Index != i || v.Size != 4 {
			t.Fatalf("receipt #%d: %+v, %v", i+1, v, err)
		}
	}
	if _, err := ledger.Open(d.H).ProveReceipt(ctx, "sha256:"+fmt.Sprintf("%064x", 1)); !blocking.Has(err, blocking.LogEntryUnknown) {
		t.Fatalf("an unknown digest: %v", err)
	}
	if _, err := ledger.Open(d.H).ProveReceipt(ctx, "not a digest"); !blocking.Has(err, blocking.LogEntryUnknown) {
		t.Fatalf("not a digest: %v", err)
	}
}

// TestNoReceiptWithoutItsLeaf: a leaf that cannot be appended (its row
// taken behind the ledger's back) fails the seal's whole transaction: no
// receipt is stored without its leaf, and the chain still verifies.
// Once the row is gone again, the next seal appends both.
func TestNoReceiptWithoutItsLeaf(t *testing.T) {
	d := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	d.Run(t, "req-0", "AB-1234")
	db := coordtest.RawDB(t, d.Home)
	coordtest.Exec(t, db, `INSERT INTO log_leaves (idx, entry) VALUES (1, CAST('taken' AS BLOB))`)
	if _, err := d.C.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs("AB-1234"), RequestID: "req-1", Wait: 30 * time.Second}); err != nil {
		t.Logf("the run whose leaf could not be appended: %v", err)
	}
	if n := coordtest.ReceiptCount(t, d.H); n != 1 {
		t.Fatalf("%d receipts: a receipt was stored without its leaf", n)
	}
	if _, code := coordtest.VerifyCode(t, d.H); code != "" {
		t.Fatalf("the chain after a failed seal: %s", code)
	}
	coordtest.Exec(t, db, `DROP TRIGGER log_leaves_no_delete`)
	coordtest.Exec(t, db, `DELETE FROM log_leaves WHERE entry = CAST('taken' AS BLOB)`)
	d.Run(t, "req-2", "AB-1234")
	if n := logHoldsChain(t, d.H, db); n != 2 {
		t.Fatalf("%d receipts after the row was removed", n)
	}
}

// TestLogCatchesUpWithReceiptsSealedBeforeIt: a host whose receipts were
// sealed before the log existed (its log tables empty) has them all added
// in chain order by its next seal, in that seal's transaction.
func TestLogCatchesUpWithReceiptsSealedBeforeIt(t *testing.T) {
	d := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	for i := range 3 {
		d.Run(t, fmt.Sprint("req-", i), "AB-1234")
	}
	db := coordtest.RawDB(t, d.Home)
	for _, table := range []string{"log_leaves", "log_hashes", "log_checkpoints"} {
		coordtest.Exec(t, db, `DROP TRIGGER `+table+`_no_delete`)
		coordtest.Exec(t, db, `DELETE FROM `+table)
	}
	d.Run(t, "req-3", "AB-1234")
	if n := logHoldsChain(t, d.H, db); n != 4 {
		t.Fatalf("%d receipts", n)
	}
}

// TestKilledSealerLeavesNoReceiptWithoutItsLeaf: a coordinator process
// sealing runs back to back is killed (SIGKILL) at whatever point it
// reached; every receipt it left has its leaf, and the next run on the
// host seals and extends both.
func TestKilledSealerLeavesNoReceiptWithoutItsLeaf(t *testing.T) {
	if home := os.Getenv("OA_TEST_SEAL_HOME"); home != "" {
		sealUntilKilled(t, home)
		return
	}
	d := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	d.Run(t, "req-parent-0", "AB-1234")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledSealerLeavesNoReceiptWithoutItsLeaf$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OA_TEST_SEAL_HOME="+d.Home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait (bounded) until the child sealed some receipts, then kill it
	// mid-stream.
	deadline := time.Now().Add(2 * time.Minute)
	for coordtest.ReceiptCount(t, d.H) < 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	db := coordtest.RawDB(t, d.Home)
	n := logHoldsChain(t, d.H, db)
	if n < 2 {
		t.Fatalf("the child sealed %d receipts", n-1)
	}
	d.Run(t, "req-parent-1", "AB-1234")
	if logHoldsChain(t, d.H, db) != n+1 {
		t.Fatal("the run after the kill did not extend the log")
	}
	if _, code := coordtest.VerifyCode(t, d.H); code != "" {
		t.Fatalf("the chain after the kill: %s", code)
	}
}

// sealUntilKilled is the child of TestKilledSealerLeavesNoReceiptWithoutItsLeaf:
// it runs the clinic workflow until it is killed.
func sealUntilKilled(t *testing.T, home string) {
	c := coordtest.Open(t, home)
	for i := 0; ; i++ {
		if _, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs("AB-1234"), RequestID: fmt.Sprint("req-child-", i), Wait: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
}
