package main

import (
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hostile tries, each once, what a server that wants to become the
// operator would try — with root's capabilities each would succeed — and
// names what the kernel said: renice, re-pin and trace a process outside
// its tree (pid), take a real-time policy, create a BPF map, read the
// kernel log, add a key to the user keyring, make SysV shared memory,
// unshare a mount namespace and make a block-device node in its home. It
// adds the capability and seccomp lines of /proc/self/status.
func hostile(pid int) map[string]string {
	out := map[string]string{}
	out["setpriority"] = verdict(unix.Setpriority(unix.PRIO_PROCESS, pid, 19))
	var set unix.CPUSet
	set.Set(0)
	out["sched_setaffinity"] = verdict(unix.SchedSetaffinity(pid, &set))
	out["ptrace"] = verdict(unix.PtraceAttach(pid))
	prio := int32(1)
	out["sched_fifo"] = verdict(errnoOf(unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, 0, 1 /* SCHED_FIFO */, uintptr(unsafe.Pointer(&prio)))))
	// BPF_MAP_CREATE of an array map: type 2, key 4 bytes, value 4, 1 entry.
	attr := [5]uint32{2, 4, 4, 1, 0}
	out["bpf"] = verdict(errnoOf(unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))))
	buf := make([]byte, 64)
	_, err := unix.Klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf)
	out["syslog"] = verdict(err)
	_, err = unix.AddKey("user", "oa-probe", []byte("x"), unix.KEY_SPEC_USER_KEYRING)
	out["add_key"] = verdict(err)
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err == nil {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}
	out["shmget"] = verdict(err)
	out["unshare"] = verdict(unix.Unshare(unix.CLONE_NEWNS))
	out["unshare_user"] = verdict(unix.Unshare(unix.CLONE_NEWUSER))
	out["mknod"] = verdict(unix.Mknod(filepath.Join(os.Getenv("HOME"), "disk"), unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0))))
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			name, v, _ := strings.Cut(line, ":")
			switch name {
			case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
				out[name] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// errnoOf is a raw system call's error, nil on success.
func errnoOf(_, _ uintptr, e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
