package proc

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// OwnershipEnv chooses how oa owns the process trees of the servers it
// starts: unset or "cgroup" puts each tree in a cgroup v2 of its own when
// the host has a writable cgroup v2 hierarchy (and falls back to a set of
// processes otherwise); "pids" never uses a cgroup.
const OwnershipEnv = "OA_PROCESS_OWNERSHIP"

// Ownership modes, as OwnershipEnv spells them.
const (
	OwnershipCgroup = "cgroup"
	OwnershipPIDs   = "pids"
)

var (
	cgroupMu      sync.Mutex
	cgroupChecked bool
	cgroupBase    string // folder new tree cgroups are made in, "" if none
)

// CgroupParent returns the cgroup v2 folder tree cgroups are made in: the
// cgroup this process runs in, on the cgroup2 mount (pure v2 or the
// "unified" mount of a hybrid host). It answers "" when there is none,
// when it is not writable, or when OwnershipEnv says "pids".
func CgroupParent() string {
	cgroupMu.Lock()
	defer cgroupMu.Unlock()
	if !cgroupChecked {
		cgroupChecked = true
		cgroupBase = findCgroupParent()
	}
	return cgroupBase
}

func findCgroupParent() string {
	if os.Getenv(OwnershipEnv) == OwnershipPIDs {
		return ""
	}
	mount := cgroup2Mount()
	own := ownCgroup()
	if mount == "" || own == "" {
		return ""
	}
	dir := filepath.Join(mount, filepath.FromSlash(own))
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		return ""
	}
	if syscall.Access(dir, 2 /* W_OK */) != nil {
		return ""
	}
	return dir
}

// disableCgroups stops using cgroups for the rest of this process: a
// start into one failed where a start without one worked.
func disableCgroups() {
	cgroupMu.Lock()
	cgroupChecked, cgroupBase = true, ""
	cgroupMu.Unlock()
}

// cgroup2Mount finds the mount point of the cgroup2 file system in
// /proc/self/mountinfo ("" without one).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, fsType := strings.Fields(pre), strings.Fields(post)
		if len(fields) >= 5 && len(fsType) >= 1 && fsType[0] == "cgroup2" && fields[3] == "/" {
			return unescapeMount(fields[4])
		}
	}
	return ""
}

// unescapeMount undoes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path ("0::PATH" in
// /proc/self/cgroup), "" when there is none.
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") && !strings.Contains(p, "..") {
			return p
		}
	}
	return ""
}

// inCgroup reports whether process pid is in the cgroup v2 folder dir
// (its "0::PATH" line in /proc/PID/cgroup, on the cgroup2 mount).
func inCgroup(pid int, dir string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	mount := cgroup2Mount()
	if err != nil || mount == "" {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, filepath.FromSlash(p)) == dir
		}
	}
	return false
}

// cgroupProcs lists the pids in a cgroup (cgroup.procs; nil when the
// folder is gone).
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for f := range bytes.FieldsSeq(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupEnded reports whether no process of the cgroup can run: the
// folder is gone, cgroup.events says "populated 0", or every process
// listed is a zombie.
func cgroupEnded(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err == nil && bytes.Contains(b, []byte("populated 0")) {
		return true
	}
	for _, pid := range cgroupProcs(dir) {
		if p, ok := readProc(pid); ok && !p.ended() {
			return false
		}
	}
	return err == nil
}

// cgroupSignal sends sig to every process of the cgroup.
func cgroupSignal(dir string, sig syscall.Signal) {
	for _, pid := range cgroupProcs(dir) {
		if p, ok := readProc(pid); ok {
			procID{p.pid, p.start}.signal(sig)
		}
	}
}

// cgroupKill kills every process of the cgroup at once: cgroup.kill where
// the kernel has it (5.14+), which no fork can race; else the cgroup is
// frozen, so nothing in it can fork, and each process gets SIGKILL (a
// fatal signal ends a frozen task).
func cgroupKill(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("1"), 0)
	cgroupSignal(dir, syscall.SIGKILL)
}

// cgroupRemove removes an ended tree's cgroup folder; a folder already
// gone is success.
func cgroupRemove(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
