package proc

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/oa-dev/oa/connector/confine"
)

// UserNamespacesEnv set to "off" keeps oa from starting servers in a user
// namespace of their own: for a host where they misbehave. A server of a
// non-root operator then gets no pid, IPC, mount or network namespace, and
// the level says which guarantees that leaves unheld.
const UserNamespacesEnv = "OA_USER_NAMESPACES"

// namespaceFlags are the namespaces a confined server gets where oa may
// make them: pid (it cannot see, signal, renice or re-pin a process outside
// its tree), mount (its own /proc; the host's socket folders and $OA_HOME
// hidden), IPC (no SysV IPC shared with the host).
const namespaceFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC

// userNamespaces reports whether this process, lacking CAP_SYS_ADMIN, can
// still give a server namespaces of its own inside a user namespace that
// maps only its own uid and gid: the kernel allows unprivileged user
// namespaces (no sysctl or AppArmor rule refuses them) and, inside one,
// /proc and tmpfs can be mounted. It is tried once, by starting the
// launcher's probe (launcher.ProbeArg) the way a server would start.
var userNamespaces = sync.OnceValue(func() bool {
	if os.Getenv(UserNamespacesEnv) == "off" {
		return false
	}
	cmd := exec.Command(confine.Self, confine.ProbeArg)
	cmd.SysProcAttr = userNamespaceAttr(namespaceFlags | syscall.CLONE_NEWNET)
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return false
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
})

// userNamespaceAttr starts a process in a new user namespace with flags,
// mapping this process's uid and gid to themselves (and nothing else). A
// process that is not uid 0 in its namespace loses its capabilities at
// exec, so the launcher is given, as ambient capabilities, the two it
// needs there (mounts; emptying its bounding set) — it clears every set
// before it executes the server.
func userNamespaceAttr(flags uintptr) *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:                 flags | syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{capSysAdmin, capSetPCap},
	}
}

// Capability numbers (linux/capability.h).
const (
	capSetPCap  = 8
	capSysAdmin = 21
)

// mayMakeNamespaces reports whether a server can get namespaces of its
// own: oa holds CAP_SYS_ADMIN, or it can make them in a user namespace.
func mayMakeNamespaces() bool {
	return canMakeNamespaces() || userNamespaces()
}

// UserNamespaces reports whether the servers this process starts get their
// namespaces inside a user namespace of their own: it lacks CAP_SYS_ADMIN,
// and the kernel gives it one (see userNamespaces).
func UserNamespaces() bool { return !canMakeNamespaces() && userNamespaces() }
