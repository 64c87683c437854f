package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procInfo is what /proc/PID/stat says of one process.
type procInfo struct {
	pid, ppid, pgrp int
	state           byte
	// start names the process for as long as it lives and never again:
	// the boot id and the kernel's start time of the pid (clock ticks
	// since boot, field 22), so a recycled pid reads as another process.
	start string
}

// ended reports whether the process can no longer run: a zombie (or a
// dead task) holds no memory, files or pipes, and a killed grandchild
// reparented to an init that reaps slowly stays one for a while.
func (p procInfo) ended() bool { return p.state == 'Z' || p.state == 'X' }

var (
	bootOnce sync.Once
	bootID   string
)

// bootPrefix is the boot id with a trailing "/", "" when unknown.
func bootPrefix() string {
	bootOnce.Do(func() {
		if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
			bootID = strings.TrimSpace(string(b)) + "/"
		}
	})
	return bootID
}

// readProc reads /proc/PID/stat. The command name is in parentheses and
// may hold spaces or parentheses, so fields are counted after the last ')'.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	// After ')': state(3) ppid(4) pgrp(5) … starttime(22).
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procInfo{}, false
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: bootPrefix() + string(f[19])}, true
}

// procID names one process: its pid and start.
type procID struct {
	pid   int
	start string
}

// self names this process.
func self() (procID, bool) {
	p, ok := readProc(os.Getpid())
	return procID{p.pid, p.start}, ok
}

// running reports whether the process named by id still runs: its pid
// belongs to the same process (same start) and it is not a zombie.
func (id procID) running() bool {
	p, ok := readProc(id.pid)
	return ok && p.start == id.start && !p.ended()
}

// signal sends sig to the process named by id, and to no other: the pid is
// pinned with a pidfd (os.FindProcess) before its start is checked, so a
// pid recycled between the check and the signal cannot be hit.
func (id procID) signal(sig syscall.Signal) {
	proc, err := os.FindProcess(id.pid)
	if err != nil {
		return
	}
	defer proc.Release()
	if !id.running() {
		return
	}
	_ = proc.Signal(sig)
}

// childrenByParent scans /proc once and maps each pid to its live
// children. A process that called setsid or setpgid is still its parent's
// child, so the walk follows it.
func childrenByParent() map[int][]procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int][]procInfo{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && !p.ended() {
			out[p.ppid] = append(out[p.ppid], p)
		}
	}
	return out
}
