package store

import (
	"context"
	"database/sql"
	"testing"

	"github.com/oa-dev/oa/internal/store/storetest"
)

// TestOpenDatabaseOfMain: a database made by the code before the move
// (storetest.MainDatabase)
// opens without a migration, and every row is read back byte for byte
// through versionsIn, Versions and the OwnedTrees; new rows
// append after the old. The stages' rows are read back by their owners'
// reads in audit's TestDumpOfMain.
func TestOpenDatabaseOfMain(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, storetest.MainDatabase(t))
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, schemaVersion)
	}
	var versions []Version
	err := db.Snapshot(ctx, func(tx *sql.Tx) (err error) {
		versions, err = versionsIn(ctx, tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 {
		t.Fatalf("versions = %+v", versions)
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
}
