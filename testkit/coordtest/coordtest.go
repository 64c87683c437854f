// Package coordtest serves the clinic example's bound deployment on the
// sandbox connector with a real coordinator, and edits its database
// behind the coordinator's back the way a tamperer would: the kit of the
// coordinator's tests and of the ledger's, whose records the coordinator
// writes. Tests only.
package coordtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"

	_ "modernc.org/sqlite" // the driver RawDB opens the file with
)

// Served is a bound clinic deployment on the sandbox connector, opened
// and served by a coordinator.
type Served struct {
	*hosttest.Host
	// H is the host opened; C the coordinator serving the deployment.
	H *host.Host
	C *coordinator.Coordinator
}

// Serve makes a test host with the capability registry source registry,
// the sandbox connection and a binding, and opens a coordinator on it
// (closed when the test ends).
func Serve(t testing.TB, registry string) *Served {
	t.Helper()
	s := &Served{Host: hosttest.New(t, nil)}
	s.WriteRegistry(registry)
	s.H = s.Open()
	s.AddConnection(s.H, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	s.Bind(s.H, "claude-test")
	s.C = Open(t, s.Home)
	return s
}

// Open opens another coordinator of the clinic deployment on the host at
// home (closed when the test ends); its operator lines go to the test
// log.
func Open(t testing.TB, home string) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: home, Deployment: "clinic", EffectTimeout: 2 * time.Second, Operator: Log{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Inputs are the clinic workflow's inputs for a record.
func Inputs(record string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"record_ref":%q,"urgency":"soon","summary":"Persistent cough, three days."}`, record))
}

// Run runs the clinic workflow on record under requestID and waits for
// its result.
func (s *Served) Run(t testing.TB, requestID, record string) *coordinator.Result {
	t.Helper()
	res, err := s.C.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: Inputs(record), RequestID: requestID, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Log writes operator lines to the test log.
type Log struct{ T testing.TB }

// Write logs p as one line.
func (w Log) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Notes counts the notes the sandbox app of the host at home holds for a
// record.
func Notes(t testing.TB, home, record string) int {
	t.Helper()
	notes, err := sandbox.Notes(sandbox.Dir(home), record)
	if err != nil {
		t.Fatal(err)
	}
	return len(notes)
}

// VerifyCode is ledger.VerifyReceipts of h, held to agree with its own
// error, and the code of its break ("" when the chain holds).
func VerifyCode(t testing.TB, h *host.Host) (*ledger.ChainReport, blocking.Code) {
	t.Helper()
	r, err := ledger.Open(h).VerifyReceipts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != (r.Err() == nil) {
		t.Fatalf("report and its error disagree: %+v", r)
	}
	return r, r.Code
}

// ReceiptCount is how many receipts h's store holds.
func ReceiptCount(t testing.TB, h *host.Host) int {
	t.Helper()
	n := 0
	ctx := context.Background()
	err := h.Snapshot(ctx, func(tx *sql.Tx) error {
		return ledger.EachReceiptIn(ctx, tx, func(*ledger.ReceiptRow) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// RawDB opens the host's SQLite file directly, the way someone editing it
// behind the coordinator's back would, with the append-only triggers
// dropped.
func RawDB(t testing.TB, home string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, host.StateFile)+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, trig := range []string{"receipts_no_update", "receipts_no_delete", "versions_no_update", "versions_no_delete"} {
		Exec(t, db, "DROP TRIGGER IF EXISTS "+trig)
	}
	return db
}

// Exec runs one statement on db, failing the test when it fails.
func Exec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// EditReceipt replaces old with new in receipt seq's record, as someone
// editing the database would: the record unpacked, edited and written
// back plain.
func EditReceipt(t testing.TB, db *sql.DB, seq int, old, new string) {
	t.Helper()
	var record []byte
	if err := db.QueryRow(`SELECT record FROM receipts WHERE seq = ?`, seq).Scan(&record); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(store.Unpack(record)), old, new, 1)
	if edited == string(store.Unpack(record)) {
		t.Fatalf("receipt #%d holds no %q", seq, old)
	}
	Exec(t, db, `UPDATE receipts SET record = ? WHERE seq = ?`, []byte(edited), seq)
}
