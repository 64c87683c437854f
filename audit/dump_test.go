package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/internal/store/storetest"
	"github.com/oa-dev/oa/ledger"
)

// TestDumpOfMain: a database made by the code before the move
// (storetest.MainDatabase) is read back byte for byte through its
// owners' reads (admit's admissions and revocations, the ledger's runs
// and receipts, the store's versions) put together as a bundle's Dump.
func TestDumpOfMain(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.MainDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var d *Dump
	err = db.Snapshot(ctx, func(tx *sql.Tx) (err error) {
		d, err = readDumpIn(ctx, tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Admissions) != 1 || string(d.Admissions[0].Record) != `{"admission":1}` || string(d.Admissions[0].Signature) != `sig:{"admission":1}` || d.Admissions[0].Package != "acme/triage" {
		t.Fatalf("admissions = %+v", d.Admissions)
	}
	if len(d.Revocations) != 1 || string(d.Revocations[0].Record) != `{"revocation":1}` || d.Revocations[0].ArtifactDigest != "sha256:bbbb" {
		t.Fatalf("revocations = %+v", d.Revocations)
	}
	if len(d.Runs) != 1 || string(d.Runs[0].State) != `{"status":"terminal"}` || len(d.Receipts) != 1 || string(d.Receipts[0].Record) != `{"receipt":1}` {
		t.Fatalf("runs %+v, receipts %+v", d.Runs, d.Receipts)
	}
	if d.Runs[0].RequestID != "req-1" || d.Runs[0].Deployment != "clinic" {
		t.Fatalf("run = %+v", d.Runs[0])
	}
	if len(d.Versions) != 2 {
		t.Fatalf("versions = %+v", d.Versions)
	}
}

// TestDumpRowsKeepTheirBytes: the rows a bundle carries are encoded as
// they were when internal/store declared them (field names are the
// bundle's format), so bundles exported before the rows moved to their
// owners verify, and new ones are byte for byte the same.
func TestDumpRowsKeepTheirBytes(t *testing.T) {
	d := Dump{
		Admissions:  []admit.AdmissionRow{{Seq: 1, Package: "p", ArtifactDigest: "sha256:a", Record: []byte("r"), Signature: []byte("s")}},
		Revocations: []admit.RevocationRow{{ArtifactDigest: "sha256:b", Record: []byte("r"), Signature: []byte("s"), Seq: 2}},
		Versions:    []store.Version{},
		Runs:        []ledger.RunRow{{RunID: "run", Deployment: "d", RequestID: "q", State: []byte("{}")}},
		Receipts:    []ledger.ReceiptRow{{Seq: 3, RunID: "run", Attempt: 1, PrevDigest: "sha256:c", Record: []byte("r"), Signature: []byte("s")}},
	}
	got, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"admissions":[{"Seq":1,"Package":"p","ArtifactDigest":"sha256:a","Record":"cg==","Signature":"cw=="}],` +
		`"revocations":[{"ArtifactDigest":"sha256:b","Record":"cg==","Signature":"cw==","Seq":2}],"versions":[],` +
		`"runs":[{"RunID":"run","Deployment":"d","RequestID":"q","State":"e30="}],` +
		`"receipts":[{"Seq":3,"RunID":"run","Attempt":1,"PrevDigest":"sha256:c","Record":"cg==","Signature":"cw=="}]}`
	if string(got) != want {
		t.Fatalf("dump encodes as\n%s\nwant\n%s", got, want)
	}
}

// TestRestoreStreamRebuildsTheDump: a dump restored into an empty
// database by its owners' restores reads back the same, and a database
// that holds rows is refused.
func TestRestoreStreamRebuildsTheDump(t *testing.T) {
	ctx := context.Background()
	src, err := store.Open(ctx, storetest.MainDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	read := func(db *store.DB) *Dump {
		t.Helper()
		var d *Dump
		if err := db.Snapshot(ctx, func(tx *sql.Tx) (err error) { d, err = readDumpIn(ctx, tx); return err }); err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := read(src)
	dst, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	var head []store.Version
	var checkpoints []store.Version
	for _, v := range want.Versions {
		if v.Kind == store.KindCheckpoint {
			checkpoints = append(checkpoints, v)
		} else {
			head = append(head, v)
		}
	}
	restore := func() error {
		d := *want
		d.Versions = head
		return restoreStream(ctx, dst, &d, store.EachOf(checkpoints), store.EachOf(want.Runs), store.EachOf(want.Receipts))
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if gotJSON, _ := json.Marshal(read(dst)); string(gotJSON) != string(wantJSON) {
		t.Fatalf("restored dump\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if err := restore(); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a full database: %v", err)
	}
}

// readDumpIn reads the whole database as tx sees it, every table at one
// moment, into one Dump (Versions holds the checkpoints too), through the
// owners' readers streamDump uses: for the tests' small databases, whose
// history fits in memory.
func readDumpIn(ctx context.Context, tx *sql.Tx) (*Dump, error) {
	d := Dump{Runs: []ledger.RunRow{}, Receipts: []ledger.ReceiptRow{}}
	var err error
	if d.Admissions, d.Revocations, err = admit.RowsIn(ctx, tx); err != nil {
		return nil, err
	}
	if d.Versions, err = store.VersionsButCheckpointsIn(ctx, tx); err != nil {
		return nil, err
	}
	if err := store.EachCheckpointIn(ctx, tx, func(v *store.Version) error { d.Versions = append(d.Versions, *v); return nil }); err != nil {
		return nil, err
	}
	if err := ledger.EachRunIn(ctx, tx, func(r *ledger.RunRow) error { d.Runs = append(d.Runs, *r); return nil }); err != nil {
		return nil, err
	}
	if err := ledger.EachReceiptIn(ctx, tx, func(r *ledger.ReceiptRow) error { d.Receipts = append(d.Receipts, *r); return nil }); err != nil {
		return nil, err
	}
	return &d, nil
}
