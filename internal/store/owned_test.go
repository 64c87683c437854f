package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestOwnedLedger: rows are recorded once per (tree, pid), listed by tree
// and pid, survive a reopen, and a tree is forgotten whole; an incomplete
// row is refused and nothing of its write is kept.
func TestOwnedLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTest(t, path)
	owner := OwnedProcess{OwnerPID: 10, OwnerStart: "boot/100"}
	row := func(tree string, pid int, start, cgroup string) OwnedProcess {
		r := owner
		r.Tree, r.PID, r.PIDStart, r.Cgroup = tree, pid, start, cgroup
		return r
	}
	want := []OwnedProcess{row("a", 0, "", "/cg/oa-a"), row("a", 11, "boot/101", "/cg/oa-a"), row("b", 12, "boot/102", "")}
	if err := db.Ledger().RecordOwned(ctx, want[2], want[1], want[0]); err != nil {
		t.Fatal(err)
	}
	// The same (tree, pid) again keeps the first row.
	if err := db.Ledger().RecordOwned(ctx, row("a", 11, "boot/999", "/other")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []OwnedProcess{row("", 1, "s", ""), row("c", 0, "s", ""), row("c", 3, "", ""), row("c", -1, "s", ""), {Tree: "c", PID: 4, PIDStart: "s"}} {
		if err := db.Ledger().RecordOwned(ctx, row("c", 5, "boot/105", ""), bad); err == nil {
			t.Fatalf("incomplete row %+v recorded", bad)
		}
	}
	db.Close()
	db = openTest(t, path)
	got, err := db.Ledger().OwnedProcesses(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("OwnedProcesses: %v\n got %+v\nwant %+v", err, got, want)
	}
	if err := db.Ledger().ForgetOwned(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Ledger().OwnedProcesses(ctx); err != nil || !slices.Equal(got, want[2:]) {
		t.Fatalf("after forgetting tree a: %v %+v", err, got)
	}
}
