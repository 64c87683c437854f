package proc

import (
	"context"
	"database/sql"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/internal/store"
)

// openStore opens the state database at path (a new one when "") for the
// owned trees' rows.
func openStore(t *testing.T, path string) *store.DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "state.db")
	}
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && !p.ended()
}

// startOf is the start an owned-tree row names process pid by ("" when it
// is not running).
func startOf(pid int) string {
	p, ok := readProc(pid)
	if !ok {
		return ""
	}
	return p.start
}

// TestReapRefusesForeignCgroup: a row edited to name a cgroup oa did not
// make is refused and kept, and nothing is killed.
func TestReapRefusesForeignCgroup(t *testing.T) {
	db := openStore(t, "")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := db.OwnedTrees(testOwnedKey).RecordOwned(context.Background(), store.OwnedProcess{Tree: "t1", OwnerPID: dead.Process.Pid, OwnerStart: "gone/1", Cgroup: "/sys/fs/cgroup/system.slice"}); err != nil {
		t.Fatal(err)
	}
	n, err := ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey))
	if err == nil || n != 0 {
		t.Fatalf("ReapOrphans of a foreign cgroup: %d, %v", n, err)
	}
	if rows, _ := db.OwnedTrees(testOwnedKey).OwnedProcesses(context.Background()); len(rows) != 1 {
		t.Fatalf("the refused row was dropped: %+v", rows)
	}
}

// testOwnedKey is the key the tests' owned trees authenticate rows with.
var testOwnedKey = []byte("connector test owned key, 32 b!!")

// TestReapLeavesForgedAndUnprovenRowsAlone (D7): an owned-tree row naming a
// live unrelated process by its true pid and start time, under a dead
// owner, must never get it killed: a row without this host's MAC is not
// acted on, and an authentic row's process must still be in the group
// (or carry the mark) its owner gave the tree.
func TestReapLeavesForgedAndUnprovenRowsAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openStore(t, path)
	bystander := exec.Command("sleep", "1000")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := bystander.Process.Pid
	start := startOf(pid)
	if start == "" {
		t.Fatal("cannot read the bystander's start")
	}
	// Forged: written by someone without the key (here, raw SQL on the file).
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO owned_processes (tree, owner_pid, owner_start, pid, pid_start, cgroup) VALUES ('forged', ?, 'gone/1', ?, ?, '')`, dead.Process.Pid, pid, start); err != nil {
		t.Fatal(err)
	}
	// Another key's row is as foreign.
	if err := db.OwnedTrees([]byte("another host's key")).RecordOwned(context.Background(), store.OwnedProcess{Tree: "other-key", OwnerPID: dead.Process.Pid, OwnerStart: "gone/1", PID: pid, PIDStart: start}); err != nil {
		t.Fatal(err)
	}
	n, err := ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey))
	if n != 0 || err == nil || !strings.Contains(err.Error(), "MAC") {
		t.Fatalf("ReapOrphans over forged rows: %d trees, %v", n, err)
	}
	if !alive(pid) {
		t.Fatal("a process named by a forged owned-tree row was killed")
	}
	// Authentic, but the process was never in the tree's group.
	if err := db.OwnedTrees(testOwnedKey).RecordOwned(context.Background(), store.OwnedProcess{Tree: "unproven", OwnerPID: dead.Process.Pid, OwnerStart: "gone/1", PID: pid, PIDStart: start, PGID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey)); err == nil {
		t.Fatal("the forged rows are no longer reported")
	}
	// ReapOrphans returns once what it killed has ended: had it been
	// signalled, the bystander would be a zombie by now.
	if !alive(pid) {
		t.Fatal("a process not proven a member of the tree was killed")
	}
}
