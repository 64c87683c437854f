package coordinator_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oa-dev/oa/coordinator"
)

// TestQuestionPeerJudged: the question socket's peer check, on a /proc of
// the test's making (pid 100 the coordinator, uid 1000): the coordinator
// itself and an unrelated process of its user in its pid namespace pass;
// another user, another pid namespace, a process in a server tree's
// cgroup (in any hierarchy), the coordinator's child and a grandchild,
// and a pid that cannot be read (gone, or pid 0) are refused.
func TestQuestionPeerJudged(t *testing.T) {
	proc := t.TempDir()
	const self, uid = 100, 1000
	mk := func(pid, ppid int, ns, cgroup string) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ns, filepath.Join(dir, "ns", "pid")); err != nil {
			t.Fatal(err)
		}
		stat := strconv.Itoa(pid) + " (odd) name) S " + strconv.Itoa(ppid) + " 1 1 0\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const host = "pid:[4026531836]"
	mk(1, 0, host, "0::/init.scope\n")
	mk(50, 1, host, "0::/user.slice/user-1000.slice/session-1.scope\n")
	mk(self, 1, host, "0::/system.slice/oa.service\n")
	mk(200, 50, host, "0::/user.slice/user-1000.slice/session-1.scope\n")                 // a shell's oa attention answer
	mk(201, self, host, "0::/system.slice/oa.service\n")                                  // a server, no cgroup
	mk(202, 201, host, "0::/system.slice/oa.service\n")                                   // what it started
	mk(203, 1, host, "0::/system.slice/oa-0123456789abcdef\n")                            // an orphan in a tree's cgroup
	mk(204, 1, host, "12:pids:/oa.slice/oa-fedcba9876543210/x\n1:name=systemd:/\n0::/\n") // cgroup v1 hierarchy
	mk(205, 1, "pid:[4026532999]", "0::/\n")                                              // its own pid namespace
	mk(206, 1, host, "0::/system.slice/oa-notatree\n")                                    // not a tree's name
	for _, tc := range []struct {
		pid, uid int
		refused  string
	}{
		{self, uid, ""},
		{200, uid, ""},
		{206, uid, ""},
		{200, 0, "another user"},
		{201, uid, "server's tree"},
		{202, uid, "server's tree"},
		{203, uid, "server's tree"},
		{204, uid, "server's tree"},
		{205, uid, "server's tree"},
		{999, uid, "cannot be identified"},
		{0, uid, "cannot be identified"},
	} {
		got := coordinator.JudgeQuestionPeer(proc, tc.pid, tc.uid, self, uid)
		if (tc.refused == "") != (got == "") || !strings.Contains(got, tc.refused) {
			t.Errorf("pid %d uid %d: %q, want %q", tc.pid, tc.uid, got, tc.refused)
		}
	}
}
