package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/internal/store/storetest"
)

func openTest(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// insertOne appends a version of (test, p), so the file has a row.
func insertOne(ctx context.Context, db *DB) error {
	_, err := db.Versions().Insert(ctx, "test", "p", func(seq int64, _ *Version) ([]byte, []byte, error) {
		return []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`), []byte("sig"), nil
	})
	return err
}

// TestTamperedRowReturnedAsStored documents that the store does not hide or
// repair an edited row: it returns what is in the file, and detecting the
// edit is the job of whoever checks the signature (the admit package).
func TestOpenModesAndFutureSchema(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "home", "nested")
	path := filepath.Join(dir, "oa.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := insertOne(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), m)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir: %v, %v; want mode 0700", fi.Mode(), err)
	}
	var version int
	if err := db.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, schemaVersion)
	}
	var mode string
	if err := db.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening an up-to-date database is fine and keeps the data.
	db = openTest(t, path)
	if as, err := db.Versions().History(ctx, "test", "p"); err != nil || len(as) != 1 {
		t.Fatalf("after reopen: %v, %v", as, err)
	}

	raw := storetest.RawOpen(t, path)
	future := schemaVersion + 7
	if _, err := raw.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(future)); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(ctx, path)
	if err == nil {
		db2.Close()
		t.Fatal("Open of a database with a future schema succeeded")
	}
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), strconv.Itoa(future)) {
		t.Fatalf("Open error = %v; want ErrSchemaTooNew naming version %d", err, future)
	}
	t.Log(err)
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oa.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not sqlite "), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if db, err := Open(context.Background(), path); err == nil {
		db.Close()
		t.Fatal("Open of a non-database file succeeded")
	}
}

func TestOpenOddPath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dir with space?x=1#frag%20", "oa.db")
	db := openTest(t, path)
	if err := insertOne(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the path given: %v", err)
	}
}
