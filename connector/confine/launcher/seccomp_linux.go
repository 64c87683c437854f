package launcher

import (
	"fmt"
	"slices"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// namespaceFlags are the clone flags that ask for a new namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// arg is one argument condition of a filter rule.
func arg(n uint32, op seccomp.Operation, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: n, Operation: op, Value: v}
}

// conditions are the argument conditions of the denials that refuse only
// some calls (Denial.When); a call named here with several condition
// sets is refused when any set matches.
var conditions = map[string][]seccomp.ArgumentConditions{
	"unshare":            {{arg(0, seccomp.BitsSet, namespaceFlags)}},
	"clone":              {{arg(0, seccomp.BitsSet, namespaceFlags)}},
	"mknod":              {{arg(1, seccomp.BitsSet, unix.S_IFCHR)}},
	"mknodat":            {{arg(2, seccomp.BitsSet, unix.S_IFCHR)}},
	"sched_setscheduler": {{arg(1, seccomp.NotEqual, unix.SCHED_NORMAL), arg(1, seccomp.NotEqual, unix.SCHED_BATCH), arg(1, seccomp.NotEqual, unix.SCHED_IDLE)}},
	"setpriority":        {{arg(1, seccomp.NotEqual, 0)}},
	"sched_setaffinity":  {{arg(0, seccomp.NotEqual, 0)}},
	"ioprio_set":         {{arg(1, seccomp.NotEqual, 0)}},
	"socket":             {{arg(0, seccomp.NotEqual, unix.AF_UNIX), arg(0, seccomp.NotEqual, unix.AF_NETLINK)}},
}

// policy builds the filter of s for this machine's architecture. A call
// this architecture does not have (iopl on arm64) is left out.
func policy(s *Spec) (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, err
	}
	layers := Layers(s)
	deny := seccomp.SyscallGroup{Action: seccomp.ActionErrno}
	enosys := seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)}
	for _, d := range Denials {
		if d.Layer != "" && !slices.Contains(layers, d.Layer) {
			continue
		}
		for _, call := range d.Calls {
			if _, ok := info.SyscallNames[call]; !ok {
				continue
			}
			switch {
			case call == "clone3":
				enosys.Names = append(enosys.Names, call)
			case conditions[call] != nil:
				for _, c := range conditions[call] {
					deny.NamesWithCondtions = append(deny.NamesWithCondtions, seccomp.NameWithConditions{Name: call, Conditions: c})
				}
			default:
				deny.Names = append(deny.Names, call)
			}
		}
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{deny, enosys}}, nil
}

// loadFilter installs the filter of s on every thread of this process.
// It needs no_new_privs, which Landlock has set by then.
func loadFilter(s *Spec) error {
	p, err := policy(s)
	if err != nil {
		return err
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p}); err != nil {
		return err
	}
	return loadNativeOnly()
}

// loadNativeOnly adds a second filter that refuses (ENOSYS) every call
// made through another architecture's entry: the filter above checks
// calls of this architecture only and lets the others through, and on
// x86_64 a process can still make i386 calls (int 0x80), whose numbers
// the filter does not read. go-seccomp-bpf has no policy for that case,
// so this one check is written here.
func loadNativeOnly() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	const archOffset = 4 // seccomp_data.arch
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("the architecture filter: %w", errno)
	}
	return nil
}
