package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestKilledCoordinatorLeftoversReaped: `oa coordinator serve` is killed
// with SIGKILL while a downstream call hangs. The downstream server's tree
// — a grandchild in its group and one that called setsid — outlives it,
// orphaned. The next `oa coordinator serve` on the same OA_HOME ends that
// tree before it answers initialize, and its owned trees then name only its
// own server. Run with each way of owning a tree this host has.
func TestKilledCoordinatorLeftoversReaped(t *testing.T) {
	modes := []string{proc.OwnershipPIDs}
	if cgroupWritable() {
		modes = append(modes, proc.OwnershipCgroup)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { killedCoordinator(t, mode) })
	}
}

// cgroupWritable reports whether this host has a cgroup v2 mount oa could
// make tree cgroups in (what connector looks for).
func cgroupWritable() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || !strings.Contains(string(b), " - cgroup2 ") {
		return false
	}
	return os.Geteuid() == 0
}

func killedCoordinator(t *testing.T, mode string) {
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	// A folder whose path the connection check does not take for a secret
	// (t.TempDir's name is one long mixed run of letters and digits).
	dir, err := os.MkdirTemp("", "oa.tree.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pidFile, callFile := filepath.Join(dir, "pids"), filepath.Join(dir, "calls")
	tools := connectortest.WriteTools(t, dir, []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Hang: true},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
	})
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t),
		Args: []string{"--tools", tools, "--spawn-grandchild", "--spawn-setsid", "--pid-file", pidFile, "--call-file", callFile}, Confinement: connectortest.Allow(dir)})
	h.Bind(host, "claude-test")
	host.Close()
	env := append(os.Environ(), "OA_HOME="+h.Home, proc.OwnershipEnv+"="+mode)
	// Runs last: whatever a failed run left is ended from the owned trees.
	t.Cleanup(func() { reapLeftovers(t, h.Home) })

	// The connection's verification ran the server once: its pid file is
	// not the coordinator's server's, which starts after initialize.
	if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	first := startCoordinator(t, env)
	tree := readTree(t, pidFile)
	called := make(chan error, 1)
	go func() {
		_, err := first.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
		called <- err
	}()
	waitFor(t, "the downstream call to arrive", func() bool { b, _ := os.ReadFile(callFile); return strings.Contains(string(b), "read_record") })
	if mode == proc.OwnershipPIDs {
		// A set of processes is recorded as it is found.
		waitFor(t, "the detached grandchild to be recorded", func() bool { return ownedTreesName(t, h.Home, tree[2]) })
	}

	first.kill(t)
	<-called
	for _, p := range tree[1:] {
		if !alive(p) {
			t.Fatalf("downstream process %d did not outlive the killed coordinator: nothing to reap\n%s", p, first.stderr)
		}
	}
	if rows := ownedProcesses(t, h.Home); len(rows) == 0 {
		t.Fatal("the killed coordinator's tree is not in the owned trees")
	}

	second := startCoordinator(t, env) // initialize answered: leftovers are reaped before it
	for _, p := range tree {
		if alive(p) {
			t.Errorf("process %d of the killed coordinator's tree still runs after the next start\n%s", p, second.stderr)
		}
	}
	for _, r := range ownedProcesses(t, h.Home) {
		if r.OwnerPID != second.pid {
			t.Errorf("the owned trees still hold a tree of owner %d: %+v", r.OwnerPID, r)
		}
	}
	readTree(t, pidFile) // the second coordinator's server, killed at the end if need be
	if err := second.cs.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.stderr.String(), "ended 1 downstream process tree") {
		t.Errorf("the operator was not told of the reaped tree:\n%s", second.stderr)
	}
	if rows := ownedProcesses(t, h.Home); len(rows) != 0 {
		t.Errorf("a clean exit left rows in the owned trees: %+v", rows)
	}
}

// served is a running `oa coordinator serve` with its MCP session.
type served struct {
	cs     *mcp.ClientSession
	pid    int
	stderr *lockedBuffer
}

// startCoordinator starts `oa coordinator serve --deployment clinic` with
// env and returns it once initialize is answered. The process is killed
// when the test ends.
func startCoordinator(t *testing.T, env []string) *served {
	t.Helper()
	cmd := exec.Command(oaBinary(t), "coordinator", "serve", "--deployment", "clinic")
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "orphan-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		t.Fatalf("coordinator serve: %v\n%s", err, stderr)
	}
	killAtEnd(t, cmd.Process.Pid)
	return &served{cs: cs, pid: cmd.Process.Pid, stderr: stderr}
}

// kill kills the coordinator with SIGKILL and waits until it has been
// reaped.
func (s *served) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.cs.Close() // waits for the process
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// readTree waits for the test server's pid file: the server, its
// grandchild and its detached (setsid) grandchild, each killed when the
// test ends if it still runs as itself.
func readTree(t *testing.T, file string) [3]int {
	t.Helper()
	var tree [3]int
	waitFor(t, "the downstream pid file", func() bool {
		p, ok := connectortest.PIDFile(file, 3)
		if ok {
			copy(tree[:], p)
		}
		return ok
	})
	_ = os.Remove(file)
	for _, p := range tree {
		killAtEnd(t, p)
	}
	return tree
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procStat reads the state and start time of pid.
func procStat(pid int) (state byte, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[0][0], f[19], true
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// killAtEnd kills pid when the test ends if the same process (same start
// time) still runs.
func killAtEnd(t *testing.T, pid int) {
	_, start, ok := procStat(pid)
	if pid <= 0 || !ok {
		return
	}
	t.Cleanup(func() {
		if _, now, ok := procStat(pid); ok && now == start {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// hostSecretOf is the coordinator secret of the host at home, the key of
// its owned trees' rows.
func hostSecretOf(t *testing.T, home string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ledger.SecretFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ownedProcesses reads the owned process trees of the host at home.
func ownedProcesses(t *testing.T, home string) []store.OwnedProcess {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(home, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.OwnedTrees(hostSecretOf(t, home)).OwnedProcesses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// ownedTreesName reports whether the owned trees name pid.
func ownedTreesName(t *testing.T, home string, pid int) bool {
	for _, r := range ownedProcesses(t, home) {
		if r.PID == pid {
			return true
		}
	}
	return false
}

// reapLeftovers ends, from the owned trees, whatever a failed test left.
func reapLeftovers(t *testing.T, home string) {
	db, err := store.Open(context.Background(), filepath.Join(home, host.StateFile))
	if err != nil {
		return
	}
	defer db.Close()
	if _, err := proc.ReapOrphans(context.Background(), db.OwnedTrees(hostSecretOf(t, home))); err != nil {
		t.Errorf("cleaning up: %v", err)
	}
}
