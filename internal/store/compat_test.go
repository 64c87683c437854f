package store

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/internal/store/storetest"
)

// TestOpenDatabaseOfMain: a database made by the code before the move
// (storetest.MainDatabase)
// opens without a migration, and every row is read back byte for byte
// through Dump, Versions and the OwnedTrees; new rows append after the old.
func TestOpenDatabaseOfMain(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, storetest.MainDatabase(t))
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, schemaVersion)
	}
	d, err := db.Dump(ctx)
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
	if len(d.Versions) != 2 {
		t.Fatalf("versions = %+v", d.Versions)
	}
	if v, err := db.Versions().Latest(ctx, KindCheckpoint, CheckpointKey); err != nil || v == nil || string(v.Record) != `{"checkpoint":1}` {
		t.Fatalf("checkpoint = %+v, %v", v, err)
	}
	if seq, err := db.Versions().Insert(ctx, KindConnection, "sandbox", func(seq int64, prev *Version) ([]byte, []byte, error) {
		if prev == nil || string(prev.Record) != `{"connection":1}` {
			t.Errorf("previous version = %+v", prev)
		}
		return []byte(`{"connection":2}`), []byte("sig"), nil
	}); err != nil || seq != 2 {
		t.Fatalf("appending to main's chain: %d, %v", seq, err)
	}
	// A row from before rows carried the MAC opens, and is never taken
	// for an authentic one.
	owned, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(ctx)
	if err != nil || len(owned) != 1 || owned[0].Tree != "tree-1" || owned[0].Cgroup != "/oa/tree-1" || owned[0].Authentic {
		t.Fatalf("owned = %+v, %v", owned, err)
	}
	if runs, err := db.RunsOf(ctx, "clinic"); err != nil || len(runs) != 1 || runs[0].RequestID != "req-1" {
		t.Fatalf("runs of clinic = %+v, %v", runs, err)
	}
}
