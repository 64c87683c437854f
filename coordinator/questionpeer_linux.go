package coordinator

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// checkQuestionPeer is the question socket's check of who connected, from
// the kernel's record of the peer (SO_PEERCRED, taken at connect time;
// nothing the peer says or sets, such as its environment, is read). It
// returns why the peer is refused, or "" when it may go on to prove it
// holds the host's secret. It is defence in depth — the MAC decides — and
// fails closed: a peer that cannot be looked at is refused. Refused are:
//
//   - another user than the coordinator's (the socket is 0600 in a 0700
//     folder, so only root gets here);
//   - a peer in another pid namespace than the coordinator's (a server's
//     tree given its own), or one the coordinator cannot see (pid 0);
//   - a process in a cgroup the connector made for a server's tree
//     (oa-<tree id>, connector/proctree.go), whichever coordinator's: it
//     cannot leave it, however it detaches;
//   - a descendant of this coordinator (its servers and what they start:
//     without a cgroup the coordinator is their subreaper, so an orphan
//     comes back under it).
//
// The coordinator's own process is let through: it is the client in the
// tests and tools that run both in one process.
func checkQuestionPeer(conn net.Conn) string {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return "the sender cannot be identified"
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return "the sender cannot be identified"
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return "the sender cannot be identified"
	}
	return judgeQuestionPeer("/proc", int(cred.Pid), int(cred.Uid), os.Getpid(), os.Geteuid())
}

// judgeQuestionPeer is checkQuestionPeer's decision about the peer pid of
// user uid, read under proc, for the coordinator self running as user
// selfUID.
func judgeQuestionPeer(proc string, pid, uid, self, selfUID int) string {
	const unknown = "the sender cannot be identified"
	const inTree = "the request came from a process of a downstream server's tree"
	if uid != selfUID {
		return "the request came from another user than the coordinator's"
	}
	if pid <= 0 {
		return unknown
	}
	if pid == self {
		return ""
	}
	own, err1 := os.Readlink(filepath.Join(proc, strconv.Itoa(self), "ns", "pid"))
	theirs, err2 := os.Readlink(filepath.Join(proc, strconv.Itoa(pid), "ns", "pid"))
	switch {
	case err1 != nil || err2 != nil:
		return unknown
	case own != theirs:
		return inTree
	}
	cg, err := readProcFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return unknown
	}
	if inServerCgroup(cg) {
		return inTree
	}
	// Up the parents to pid 1, bounded: a pid seen twice ends the walk.
	seen := map[int]bool{}
	for p := pid; p > 1 && !seen[p] && len(seen) < 4096; {
		seen[p] = true
		stat, err := readProcFile(filepath.Join(proc, strconv.Itoa(p), "stat"))
		if err != nil {
			if p == pid {
				return unknown
			}
			break // the parent exited between reads: it is no longer above
		}
		parent, ok := parentOf(stat)
		if !ok {
			return unknown
		}
		if parent == self {
			return inTree
		}
		p = parent
	}
	return ""
}

// readProcFile reads a small /proc file, at most 64 KiB of it.
func readProcFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

// inServerCgroup reports whether a /proc/PID/cgroup text places the
// process, in any hierarchy, under a cgroup named as the connector names
// a server tree's: "oa-" and 16 lower-case hex digits.
func inServerCgroup(text []byte) bool {
	for line := range bytes.Lines(text) {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(strings.TrimSpace(string(line)), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, name := range strings.Split(parts[2], "/") {
			if isTreeCgroup(name) {
				return true
			}
		}
	}
	return false
}

// isTreeCgroup reports whether name is "oa-" and 16 lower-case hex digits.
func isTreeCgroup(name string) bool {
	id, ok := strings.CutPrefix(name, "oa-")
	if !ok || len(id) != 16 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// parentOf reads the parent pid from a /proc/PID/stat text: the fourth
// field, counted after the command name's closing parenthesis (the name
// may itself hold spaces and parentheses).
func parentOf(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(f[1])
	return n, err == nil
}
