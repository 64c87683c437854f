package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/store"
)

// Grace periods for ending a server. A server's tree gets termGrace after
// SIGTERM to exit by itself; then it is killed, and its end must be
// verified within verifyWithin.
var (
	termGrace    = 1 * time.Second
	verifyWithin = 5 * time.Second
	// sampleEvery is how often the members of a tree owned as a set of
	// processes are looked for (a cgroup needs no looking).
	sampleEvery = 200 * time.Millisecond
)

// OwnedTrees keeps a durable record of the process trees this process
// started, so that a later process can end what this one leaves behind
// when it dies without ending them (see ReapOrphans). *store.OwnedTrees
// (a host's, host.Host.OwnedTrees) is one.
type OwnedTrees interface {
	RecordOwned(ctx context.Context, rows ...store.OwnedProcess) error
	OwnedProcesses(ctx context.Context) ([]store.OwnedProcess, error)
	ForgetOwned(ctx context.Context, tree string) error
}

// recordTimeout bounds one write to the owned trees.
const recordTimeout = 10 * time.Second

// tree is the process tree of one started server: the server and every
// process it starts, however they detach (setsid, setpgid, double fork).
//
// With a writable cgroup v2 the tree is a cgroup of its own, made before
// the server starts and entered by the start itself (clone3
// CLONE_INTO_CGROUP), so no descendant can be outside it; ending it is
// cgroup.kill, and ended means "populated 0".
//
// Without one, the tree is a set of processes named by pid and start
// time: the server, and its descendants found by walking /proc (children
// by PPid) every sampleEvery and before it is ended. To end it, every
// member is stopped (SIGSTOP) and the walk repeated until it finds no new
// child — nothing stopped can fork, so the set is then complete — and
// each member gets SIGKILL. A descendant whose parent exits between two
// walks is reparented away and can escape this mode; a cgroup cannot be
// escaped.
//
// Both modes record the tree in the OwnedTrees (when there are any) before the
// server can do anything — the cgroup row before the start, each process
// row as it is found — and forget it once its end is verified.
type tree struct {
	id     string
	owned  OwnedTrees
	owner  procID
	cgroup string   // the tree's cgroup folder, "" when owned as a set
	cgFD   *os.File // open on the cgroup until the server has started

	mu      sync.Mutex
	members map[int]string // pid → start
	leader  int            // the server's pid, 0 before it started
	stop    chan struct{}  // ends the sampler
	stopped bool
}

// newTree prepares the tree of a server about to start: its cgroup when
// the host has one to give (and mode is not OwnershipPIDs), recorded in
// the owned trees before the start.
func newTree(owned OwnedTrees, mode string) (*tree, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	t := &tree{id: hex.EncodeToString(raw[:]), owned: owned, members: map[int]string{}, stop: make(chan struct{})}
	owner, ok := self()
	if !ok && owned != nil {
		return nil, errors.New("connector: this process cannot read its own /proc entry to record what it starts")
	}
	t.owner = owner
	if parent := CgroupParent(); parent != "" && mode != OwnershipPIDs {
		t.makeCgroup(filepath.Join(parent, "oa-"+t.id))
	}
	if t.cgroup == "" {
		// Owned as a set of processes: a descendant whose parent exits
		// before a walk finds it must come back to this process, not to
		// init, to be found (see adopt).
		becomeSubreaper()
	}
	if t.cgroup != "" && owned != nil {
		if err := t.record(store.OwnedProcess{Cgroup: t.cgroup}); err != nil {
			t.dropCgroup()
			return nil, err
		}
	}
	return t, nil
}

// makeCgroup makes the tree's cgroup and opens it for the start; any
// failure leaves the tree to be owned as a set of processes.
func (t *tree) makeCgroup(dir string) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return
	}
	t.cgroup, t.cgFD = dir, fd
}

// cgroupFD is the descriptor the server is started into, -1 for none.
func (t *tree) cgroupFD() int {
	if t.cgFD == nil {
		return -1
	}
	return int(t.cgFD.Fd())
}

// dropCgroup gives the cgroup up before anything started in it.
func (t *tree) dropCgroup() {
	if t.cgFD != nil {
		t.cgFD.Close()
		t.cgFD = nil
	}
	if t.cgroup != "" {
		_ = os.Remove(t.cgroup)
		t.cgroup = ""
	}
}

// record writes rows of this tree to the owned trees.
func (t *tree) record(rows ...store.OwnedProcess) error {
	if t.owned == nil || len(rows) == 0 {
		return nil
	}
	t.mu.Lock()
	leader := t.leader
	t.mu.Unlock()
	for i := range rows {
		rows[i].Tree, rows[i].OwnerPID, rows[i].OwnerStart = t.id, t.owner.pid, t.owner.start
		if rows[i].Cgroup == "" {
			rows[i].Cgroup = t.cgroup
		}
		if rows[i].PID > 0 {
			// The server is started as the leader of its own process
			// group: the group a reaper holds members to.
			rows[i].PGID = leader
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := t.owned.RecordOwned(ctx, rows...); err != nil {
		return fmt.Errorf("connector: recording the processes of a server: %w", err)
	}
	return nil
}

// started notes the server's process, records it, and (for a tree owned
// as a set) starts looking for its descendants.
func (t *tree) started(cmd *exec.Cmd) error {
	if t.cgFD != nil {
		t.cgFD.Close()
		t.cgFD = nil
	}
	pid := cmd.Process.Pid
	start := ""
	if p, ok := readProc(pid); ok {
		start = p.start
	}
	t.mu.Lock()
	t.leader = pid
	if start != "" {
		t.members[pid] = start
	}
	t.mu.Unlock()
	if start == "" {
		return nil // already gone; nothing can be left of it to record
	}
	err := t.record(store.OwnedProcess{PID: pid, PIDStart: start})
	if t.cgroup == "" {
		go t.sample()
	}
	return err
}

// hasStarted reports whether the server was started.
func (t *tree) hasStarted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leader != 0
}

// sample walks the tree every sampleEvery until it is ended, recording
// new members.
func (t *tree) sample() {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			_ = t.record(t.refresh()...)
		}
	}
}

// stopSampling ends the sampler.
func (t *tree) stopSampling() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		close(t.stop)
	}
}

// refresh adds the live descendants of the members that are not members
// yet, from one scan of /proc, and returns them as owned-tree rows.
func (t *tree) refresh() []store.OwnedProcess {
	kids := childrenByParent()
	t.mu.Lock()
	defer t.mu.Unlock()
	var queue []int
	for pid, start := range t.members {
		if (procID{pid, start}).running() {
			queue = append(queue, pid)
		}
	}
	var found []store.OwnedProcess
	for _, c := range t.adoptable(kids) {
		t.members[c.pid] = c.start
		found = append(found, store.OwnedProcess{PID: c.pid, PIDStart: c.start})
		queue = append(queue, c.pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range kids[pid] {
			if _, known := t.members[c.pid]; known {
				continue
			}
			t.members[c.pid] = c.start
			found = append(found, store.OwnedProcess{PID: c.pid, PIDStart: c.start})
			queue = append(queue, c.pid)
		}
	}
	return found
}

// adoptable are this process's children that are orphans of this tree
// (t.mu held): with no cgroup, this process is a subreaper, so a
// descendant whose parent exited (a double fork) is reparented to it. One
// is this tree's when it is in the server's process group or carries the
// tree's mark (TreeEnv) — never a server of another tree, nor a process
// this process started itself.
func (t *tree) adoptable(kids map[int][]procInfo) []procInfo {
	if t.cgroup != "" || t.leader == 0 {
		return nil
	}
	var out []procInfo
	for _, c := range kids[os.Getpid()] {
		if _, known := t.members[c.pid]; known {
			continue
		}
		if c.pgrp == t.leader || carriesMark(c.pid, t.id) {
			out = append(out, c)
		}
	}
	return out
}

// reapAdopted collects the exit status of the members that are this
// process's children only because they were orphaned (never the server,
// which its command waits for): a subreaper must, or they stay zombies.
func (t *tree) reapAdopted() {
	t.mu.Lock()
	var adopted []int
	for pid := range t.members {
		if pid != t.leader {
			adopted = append(adopted, pid)
		}
	}
	t.mu.Unlock()
	self := os.Getpid()
	for _, pid := range adopted {
		if p, ok := readProc(pid); ok && p.ppid == self && p.ended() {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

var subreaperOnce sync.Once

// becomeSubreaper makes this process the child subreaper of everything it
// starts (PR_SET_CHILD_SUBREAPER), once.
func becomeSubreaper() {
	subreaperOnce.Do(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// each calls f for every member.
func (t *tree) each(f func(procID)) {
	t.mu.Lock()
	ids := make([]procID, 0, len(t.members))
	for pid, start := range t.members {
		ids = append(ids, procID{pid, start})
	}
	t.mu.Unlock()
	for _, id := range ids {
		f(id)
	}
}

// signalAll sends sig to every process of the tree.
func (t *tree) signalAll(sig syscall.Signal) {
	if t.cgroup != "" {
		cgroupSignal(t.cgroup, sig)
		return
	}
	t.refresh()
	t.each(func(id procID) { id.signal(sig) })
}

// freeze stops every member and walks again until the walk finds no new
// child: once every member is stopped none can fork, so the set is whole.
func (t *tree) freeze() {
	for range 1000 {
		t.each(func(id procID) { id.signal(syscall.SIGSTOP) })
		if len(t.refresh()) == 0 {
			return
		}
	}
}

// kill ends every process of the tree at once, without grace.
func (t *tree) kill() {
	if t.cgroup != "" {
		cgroupKill(t.cgroup)
		return
	}
	t.freeze()
	t.each(func(id procID) { id.signal(syscall.SIGKILL) })
}

// ended reports whether no process of the tree can run any more.
func (t *tree) ended() bool {
	if t.cgroup != "" {
		return cgroupEnded(t.cgroup)
	}
	t.refresh()
	alive := false
	t.each(func(id procID) { alive = alive || id.running() })
	return !alive
}

// waitEnded polls until the tree has ended or d has passed.
func (t *tree) waitEnded(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if t.ended() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// release removes what is left of an ended tree: its cgroup folder and its
// rows in the owned trees.
func (t *tree) release() error {
	t.stopSampling()
	t.reapAdopted()
	if t.cgFD != nil {
		t.cgFD.Close()
		t.cgFD = nil
	}
	if t.cgroup != "" {
		deadline := time.Now().Add(verifyWithin)
		for cgroupRemove(t.cgroup) != nil {
			if time.Now().After(deadline) {
				return blocking.New(blocking.ConnectorStopFailed, "the server's cgroup cannot be removed")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return t.forget()
}

// forget removes the tree's rows from the owned trees.
func (t *tree) forget() error {
	if t.owned == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := t.owned.ForgetOwned(ctx, t.id); err != nil {
		return fmt.Errorf("connector: forgetting an ended server's processes: %w", err)
	}
	return nil
}
