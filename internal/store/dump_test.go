package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreRefusesFullTablesAndOddNames: a restore writes only into
// empty tables, and the table names the owners pass, put into the query
// as they are, are held to plain identifiers (so is CountRows's).
func TestRestoreRefusesFullTablesAndOddNames(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	v := Version{Kind: KindConnection, Key: "c", Seq: 1, Record: []byte("{}"), Signature: []byte("s")}
	restore := func() error {
		return db.Restore(ctx, func(tx *sql.Tx) error { return RestoreVersionsIn(ctx, tx, []Version{v}, EachOf[Version](nil)) })
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := restore(); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a full table: %v", err)
	}
	err := db.Snapshot(ctx, func(tx *sql.Tx) error {
		if err := RequireEmpty(ctx, tx, "runs; DROP TABLE runs"); err == nil {
			t.Error("RequireEmpty took an odd table name")
		}
		if _, _, err := db.CountRows(ctx, tx, "runs WHERE 1"); err == nil {
			t.Error("CountRows took an odd table name")
		}
		vs, err := versionsIn(ctx, tx)
		if err != nil || len(vs) != 1 || string(vs[0].Record) != "{}" {
			t.Errorf("versions = %+v, %v", vs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// versionsIn is every version as tx sees them, in the order a copy lists
// them (kind, key, seq).
func versionsIn(ctx context.Context, tx *sql.Tx) ([]Version, error) {
	return DumpTable(ctx, tx, scanVersion, versionColumns+` ORDER BY kind, key, seq`)
}
