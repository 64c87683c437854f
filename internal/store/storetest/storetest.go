// Package storetest is test plumbing for the host database: the database
// main's code wrote before the stages' tables moved to their owners'
// typed stores (testdata/README.md), and a raw handle on a database file
// that bypasses the store, as anyone with write access to it could.
package storetest

import (
	"database/sql"
	_ "embed"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

//go:embed testdata/state-1d62c78.db
var mainDatabase []byte

// MainDatabase writes a copy of the database main's code wrote at
// 1d62c78 (one row in every table; see testdata/README.md) into a folder
// the test removes, and returns its path: tests open the copy, never the
// committed file.
func MainDatabase(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, mainDatabase, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RawOpen opens the database file directly, bypassing the store, as
// anyone with write access to the file could; the test closes it.
func RawOpen(t testing.TB, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}
