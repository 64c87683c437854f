package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestOwnedTrees: rows are recorded once per (tree, pid), listed by tree
// and pid, survive a reopen, and a tree is forgotten whole; an incomplete
// row is refused and nothing of its write is kept.
func TestOwnedTrees(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTest(t, path)
	owner := OwnedProcess{OwnerPID: 10, OwnerStart: "boot/100", Authentic: true}
	row := func(tree string, pid int, start, cgroup string) OwnedProcess {
		r := owner
		r.Tree, r.PID, r.PIDStart, r.Cgroup = tree, pid, start, cgroup
		return r
	}
	want := []OwnedProcess{row("a", 0, "", "/cg/oa-a"), row("a", 11, "boot/101", "/cg/oa-a"), row("b", 12, "boot/102", "")}
	if err := db.OwnedTrees(testOwnedKey).RecordOwned(ctx, want[2], want[1], want[0]); err != nil {
		t.Fatal(err)
	}
	// The same (tree, pid) again keeps the first row.
	if err := db.OwnedTrees(testOwnedKey).RecordOwned(ctx, row("a", 11, "boot/999", "/other")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []OwnedProcess{row("", 1, "s", ""), row("c", 0, "s", ""), row("c", 3, "", ""), row("c", -1, "s", ""), {Tree: "c", PID: 4, PIDStart: "s"}} {
		if err := db.OwnedTrees(testOwnedKey).RecordOwned(ctx, row("c", 5, "boot/105", ""), bad); err == nil {
			t.Fatalf("incomplete row %+v recorded", bad)
		}
	}
	db.Close()
	db = openTest(t, path)
	got, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("OwnedProcesses: %v\n got %+v\nwant %+v", err, got, want)
	}
	if err := db.OwnedTrees(testOwnedKey).ForgetOwned(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(ctx); err != nil || !slices.Equal(got, want[2:]) {
		t.Fatalf("after forgetting tree a: %v %+v", err, got)
	}
}

// testOwnedKey is the key the tests' owned trees authenticate rows with.
var testOwnedKey = []byte("store test owned-trees key")

// TestOwnedTreesRowsAreAuthenticated: a row edited in the file, or
// written with another key or without one, reads as not Authentic; a
// store without a key records nothing.
func TestOwnedTreesRowsAreAuthenticated(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "state.db"))
	row := OwnedProcess{Tree: "a", OwnerPID: 10, OwnerStart: "boot/100", PID: 11, PIDStart: "boot/101", PGID: 11}
	if err := db.OwnedTrees(testOwnedKey).RecordOwned(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := db.OwnedTrees(nil).RecordOwned(ctx, row); err == nil {
		t.Fatal("owned trees without a key recorded a row")
	}
	read := func(key []byte) bool {
		rows, err := db.OwnedTrees(key).OwnedProcesses(ctx)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%v %+v", err, rows)
		}
		return rows[0].Authentic
	}
	if !read(testOwnedKey) || read([]byte("another key")) || read(nil) {
		t.Fatal("authentication does not follow the key")
	}
	if _, err := db.ExecContext(ctx, `UPDATE owned_processes SET pid = 4242`); err != nil {
		t.Fatal(err)
	}
	if read(testOwnedKey) {
		t.Fatal("an edited row reads as authentic")
	}
}
