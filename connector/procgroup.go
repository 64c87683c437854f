package connector

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
)

// Grace periods for ending a server. A server gets termGrace after SIGTERM
// to exit by itself; then the group gets SIGKILL, and its end must be
// verified within verifyWithin.
var (
	termGrace    = 1 * time.Second
	verifyWithin = 5 * time.Second
)

// signalGroup sends sig to every process of the group pgid. ESRCH (the group
// is gone) is success.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupEnded reports whether no process of group pgid can run any more:
// kill(-pgid, 0) answers ESRCH, or every process left in the group is a
// zombie. Zombies count as ended because a killed grandchild is reparented
// to init and stays a zombie until init reaps it, which some container inits
// do only every few seconds; a zombie holds no memory, files or pipes.
func groupEnded(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	return onlyZombies(pgid)
}

// onlyZombies scans /proc for the members of group pgid. Without /proc it
// answers false, so the caller falls back to waiting for ESRCH.
func onlyZombies(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return false
		}
	}
	return true
}

// procStat reads the state and process group of pid from /proc/PID/stat.
// The command name is in parentheses and may hold spaces, so fields are
// counted after the last ')'.
func procStat(pid int) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}

// waitGroupEnded polls until the group has ended or d has passed.
func waitGroupEnded(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if groupEnded(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// process is a server started in its own process group (pgid == pid).
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	pgid int // 0 until the command has started
}

// started records the group of the started command.
func (p *process) started(pid int) {
	p.mu.Lock()
	p.pgid = pid
	p.mu.Unlock()
}

// group returns the process group, 0 before start.
func (p *process) group() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pgid
}

// kill sends SIGKILL to the whole group at once: used when a deadline has
// already passed and there is no time to ask nicely.
func (p *process) kill() {
	if g := p.group(); g > 0 {
		_ = signalGroup(g, syscall.SIGKILL)
	}
}

// end ends the whole group and verifies it: SIGTERM to the group, up to
// termGrace for it to go, SIGKILL to whatever is left, the leader reaped
// (through the go-sdk's Close, which waits for the command, or by Wait when
// there is no session), and finally kill(-pgid, 0) must find nothing that
// can still run.
func (p *process) end(cs *mcp.ClientSession) error {
	g := p.group()
	if g == 0 {
		return nil // never started: nothing to end
	}
	_ = signalGroup(g, syscall.SIGTERM)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		if cs != nil {
			_ = cs.Close()
			return
		}
		_ = p.cmd.Wait() // "already called" when the go-sdk reaped it
	}()
	waitGroupEnded(g, termGrace)
	_ = signalGroup(g, syscall.SIGKILL)
	select {
	case <-reaped:
	case <-time.After(verifyWithin):
	}
	if !waitGroupEnded(g, verifyWithin) {
		return blocking.New(blocking.ConnectorStopFailed, "processes of the group are still running after SIGKILL")
	}
	return nil
}
