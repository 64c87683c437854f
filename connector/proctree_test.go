package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// ownershipModes are the ways a tree can be owned on this host: always as
// a set of processes, and in a cgroup when the host has a writable cgroup
// v2 (the default then).
func ownershipModes() map[string]func(connector.Options) connector.Options {
	modes := map[string]func(connector.Options) connector.Options{"pids": connector.WithPIDOwnership}
	if proc.CgroupParent() != "" {
		modes["cgroup"] = func(o connector.Options) connector.Options { return o }
	}
	return modes
}

// treeTools lists a tool that answers and one that never does.
func treeTools() []connectortest.ToolSpec {
	return []connectortest.ToolSpec{
		{Name: "lookup", Description: "Look a thing up.", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		{Name: "stall", Description: "Never answers.", Hang: true},
	}
}

// treePIDs waits for the test server's pid file and returns the server,
// its grandchild in its group, and its grandchild that called setsid.
// Each is killed when the test ends, if it still runs as itself.
func treePIDs(t *testing.T, file string) (server, grandchild, detached int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p, ok := connectortest.PIDFile(file, 3); ok {
			for _, pid := range p {
				killAtEnd(t, pid)
			}
			return p[0], p[1], p[2]
		}
		if time.Now().After(deadline) {
			t.Fatal("no pid file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stat reads the state, session and start time of pid from
// /proc/PID/stat.
func stat(pid int) (state byte, session int, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	session, _ = strconv.Atoi(f[3])
	return f[0][0], session, f[19], true
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	state, _, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// killAtEnd kills pid when the test ends, if the same process (same start
// time) still runs then, so a failed test leaves nothing behind.
func killAtEnd(t *testing.T, pid int) {
	_, _, start, ok := stat(pid)
	if pid <= 0 || !ok {
		return
	}
	t.Cleanup(func() {
		if _, _, now, ok := stat(pid); ok && now == start {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// assertEnded fails for each pid that still runs, and for a cgroup folder
// left behind.
func assertEnded(t *testing.T, cgroup string, pids ...int) {
	t.Helper()
	for _, p := range pids {
		if alive(p) {
			t.Errorf("process %d still running", p)
		}
	}
	if cgroup != "" {
		if _, err := os.Stat(cgroup); err == nil {
			t.Errorf("cgroup %s left behind", cgroup)
		}
	}
}

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

// TestCloseEndsDetachedGrandchild: a server whose grandchild left its
// session and process group (setsid) — which a process-group kill misses —
// and a call that hangs. A clean close ends the whole tree, in every
// ownership mode this host has, and the owned trees are empty afterwards.
func TestCloseEndsDetachedGrandchild(t *testing.T) {
	for name, mode := range ownershipModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pids")
			cfg := serverConfig(t, treeTools(), "--spawn-grandchild", "--spawn-setsid", "--pid-file", pidFile)
			db := openStore(t, "")
			s, err := connector.Open(context.Background(), cfg, mode(connector.Options{OwnedTrees: db.OwnedTrees(testOwnedKey)}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			server, grandchild, detached := treePIDs(t, pidFile)
			_, serverSession, _, _ := stat(server)
			if _, sid, _, _ := stat(detached); !alive(detached) || sid == serverSession || sid != detached {
				t.Fatalf("the detached grandchild is not in a session of its own (session %d, server's %d)", sid, serverSession)
			}
			if cg := connector.SessionCgroup(s); (name == "cgroup") != (cg != "") {
				t.Fatalf("mode %s: cgroup %q", name, cg)
			}
			if rows, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(context.Background()); err != nil || len(rows) == 0 {
				t.Fatalf("nothing recorded of the started tree: %v", err)
			}

			// A call in flight that never answers: Close ends the tree
			// under it, and the call returns.
			done := make(chan error, 1)
			go func() { _, err := s.Call(context.Background(), "stall", nil); done <- err }()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err == nil {
				t.Fatal("the hanging call answered")
			}
			assertEnded(t, connector.SessionCgroup(s), server, grandchild, detached)
			if rows, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(context.Background()); err != nil || len(rows) != 0 {
				t.Fatalf("the owned trees still hold an ended tree: %v %+v", err, rows)
			}
		})
	}
}

// ownerEnv carries the work of the helper owner process (see
// TestHelperOwner): the store, tools file, pid file and mode.
const ownerEnv = "OA_CONNECTOR_TEST_OWNER"

// TestHelperOwner is not a test of its own: run by TestReapOrphans as a
// subprocess, it opens a session recorded in the owned trees and hangs in a call,
// until it is killed.
func TestHelperOwner(t *testing.T) {
	spec := os.Getenv(ownerEnv)
	if spec == "" {
		return
	}
	var job struct {
		DB, Command, Mode string
		Args              []string
		Confinement       *confine.Profile
	}
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), job.DB)
	if err != nil {
		t.Fatal(err)
	}
	// The owner is killed with SIGKILL and cannot remove temporary
	// private folders: the server's go in the test's folder instead.
	opts := connector.Options{OwnedTrees: db.OwnedTrees(testOwnedKey), PrivateDir: filepath.Join(filepath.Dir(job.DB), "private")}
	if job.Mode == "pids" {
		opts = connector.WithPIDOwnership(opts)
	}
	s, err := connector.Open(context.Background(), connector.Config{Command: job.Command, Args: job.Args, Confinement: job.Confinement}, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Call(context.Background(), "stall", nil)
	t.Fatalf("the hanging call answered: %v", err)
}

// TestReapOrphans: the owner of a tree is killed with SIGKILL while a call
// hangs. The server's descendants outlive it (orphaned); ReapOrphans in
// another process ends the whole tree from the owned trees, and leaves alone a
// process whose pid a row names but whose start time differs (a pid the
// kernel gave to someone else).
func TestReapOrphans(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name := range ownershipModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dbPath := filepath.Join(dir, "state.db")
			pidFile := filepath.Join(dir, "pids")
			tools := connectortest.WriteTools(t, dir, treeTools())
			job, _ := json.Marshal(map[string]any{"DB": dbPath, "Command": connectortest.Server(t), "Mode": name,
				"Args": []string{"--tools", tools, "--spawn-grandchild", "--spawn-setsid", "--pid-file", pidFile, "--linger"}, "Confinement": connectortest.Allow(filepath.Dir(t.TempDir()))})
			// The server lingers after its stdin ends: in the pid
			// namespace a confined tree gets, its exit would end its
			// descendants with it, and whether that came before the
			// check below was a race (a hostile server need not exit).
			// Runs last: whatever a failed run left is ended from the
			// owned trees (cgroup folders included).
			t.Cleanup(func() {
				if db, err := store.Open(context.Background(), dbPath); err == nil {
					_, _ = proc.ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey))
					db.Close()
				}
			})
			owner := exec.Command(self, "-test.run=^TestHelperOwner$")
			owner.Env = append(os.Environ(), ownerEnv+"="+string(job))
			var out bytes.Buffer
			owner.Stdout, owner.Stderr = &out, &out
			if err := owner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
			server, grandchild, detached := treePIDs(t, pidFile)
			db := openStore(t, dbPath)
			waitRecorded(t, db, detached, name, &out)

			_ = owner.Process.Signal(syscall.SIGKILL)
			_ = owner.Wait()
			if !alive(grandchild) || !alive(detached) {
				t.Fatal("the tree did not outlive its owner: nothing to reap")
			}

			// A row naming a live process with another start time, as a
			// recycled pid would read.
			bystander := exec.Command("sleep", "1000")
			if err := bystander.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })
			dead := exec.Command("true")
			if err := dead.Run(); err != nil {
				t.Fatal(err)
			}
			if err := db.OwnedTrees(testOwnedKey).RecordOwned(context.Background(), store.OwnedProcess{Tree: "recycled", OwnerPID: dead.Process.Pid, OwnerStart: "gone/1",
				PID: bystander.Process.Pid, PIDStart: "another-boot/1"}); err != nil {
				t.Fatal(err)
			}

			n, err := proc.ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey))
			if err != nil || n != 2 {
				t.Fatalf("ReapOrphans: %d trees, %v", n, err)
			}
			rows, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(context.Background())
			if err != nil || len(rows) != 0 {
				t.Fatalf("rows left after reaping: %v %+v", err, rows)
			}
			assertEnded(t, "", server, grandchild, detached)
			if !alive(bystander.Process.Pid) {
				t.Fatal("a process named by a recycled pid was killed")
			}
			if n, err := proc.ReapOrphans(context.Background(), db.OwnedTrees(testOwnedKey)); err != nil || n != 0 {
				t.Fatalf("a second ReapOrphans: %d trees, %v", n, err)
			}
		})
	}
}

// waitRecorded waits until the owned trees name the detached grandchild, or
// (cgroup mode) the tree's cgroup, which holds it.
func waitRecorded(t *testing.T, db *store.DB, detached int, mode string, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := db.OwnedTrees(testOwnedKey).OwnedProcesses(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if mode == "cgroup" && r.PID == 0 && r.Cgroup != "" || mode == "pids" && r.PID == detached {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owned trees never named the tree (%s): %+v\n%s", mode, rows, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testOwnedKey is the key the tests' owned trees authenticate rows with.
var testOwnedKey = []byte("connector test owned key, 32 b!!")

// TestPIDOwnershipEndsDoubleForkedOrphan (D15): with no cgroup, a server
// that double-forks — its child starts a process in a session of its own
// and exits at once, before any walk could see the grandchild — still has
// that grandchild ended with it: the owner is the orphans' subreaper, so
// the grandchild comes back to it, carrying the tree's mark.
func TestPIDOwnershipEndsDoubleForkedOrphan(t *testing.T) {
	orphanFile := filepath.Join(t.TempDir(), "orphan")
	cfg := serverConfig(t, treeTools(), "--double-fork", orphanFile)
	db := openStore(t, "")
	s, err := connector.Open(context.Background(), cfg, connector.WithPIDOwnership(connector.Options{OwnedTrees: db.OwnedTrees(testOwnedKey)}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, ok := connectortest.PIDFile(orphanFile, 1)
	if !ok || !alive(p[0]) {
		b, _ := os.ReadFile(orphanFile)
		t.Fatalf("no orphaned grandchild runs (%q)", b)
	}
	orphan := p[0]
	killAtEnd(t, orphan)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertEnded(t, "", orphan)
}
