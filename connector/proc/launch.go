package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
)

// PrivateHome and PrivateTmp are the folders of Options.PrivateDir a
// confined server gets as HOME and TMPDIR.
const (
	PrivateHome = "home"
	PrivateTmp  = "tmp"
)

// launch is how one server is started: the program and arguments of its
// exec.Cmd, its environment, and what to remove once it has ended.
type launch struct {
	path    string
	args    []string
	env     []string
	cleanup func()
	// cloneflags are the namespaces the server starts in (CLONE_NEW*).
	cloneflags uintptr
	// userns: they are made in a user namespace of the server's own (oa
	// lacks CAP_SYS_ADMIN), mapping only oa's uid and gid.
	userns bool
}

// prepareLaunch decides how program p starts: directly when its
// profile is unconfined, otherwise through the confinement launcher (this
// program run again, see package confine) with the profile resolved, its
// private folders made and passed as HOME and TMPDIR. A kernel that cannot
// enforce the profile refuses (confinement_unavailable) before anything
// starts.
func prepareLaunch(p Program, opts Options, env []string) (*launch, error) {
	if p.Confinement.IsUnconfined() {
		return &launch{path: p.Command, args: p.Args, env: env, cleanup: func() {}}, nil
	}
	abi, err := confine.Require(p.Confinement)
	if err != nil {
		return nil, err
	}
	exe, err := exec.LookPath(p.Command)
	if err != nil {
		return nil, blocking.New(blocking.ConnectorStartFailed, "the command is not found or not executable")
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return nil, blocking.New(blocking.ConnectorStartFailed, "the command's folder cannot be read")
	}
	if missing := missingPath(p.Confinement); missing != "" {
		return nil, blocking.New(blocking.ConfinementInvalid, "the %s path of the profile no longer exists", missing)
	}
	private, cleanup, err := privateDir(opts.PrivateDir)
	if err != nil {
		return nil, err
	}
	home, tmp := filepath.Join(private, PrivateHome), filepath.Join(private, PrivateTmp)
	for _, dir := range []string{home, tmp} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			cleanup()
			return nil, blocking.New(blocking.ConnectorStartFailed, "the server's private folders cannot be made")
		}
	}
	env = withVar(withVar(env, "HOME", home), "TMPDIR", tmp)
	if home, tmp, err = realPaths(home, tmp); err != nil {
		cleanup()
		return nil, err
	}
	exact, err := confine.ExactPaths(p.Confinement, home, tmp)
	if err != nil {
		cleanup()
		return nil, namedFor(opts.Name, err)
	}
	h := holders()
	target := confine.Target{Executable: exe, PATH: lookupIn(env, "PATH"), Home: home, Tmp: tmp, Exact: exact, OwnIPC: h.Namespaces, OwnPID: h.Namespaces, HostHome: opts.HostHome}
	spec := confine.Build(p.Confinement, abi, target)
	args, err := confine.LauncherArgs(spec, exe, append([]string{p.Command}, p.Args...))
	if err != nil {
		cleanup()
		return nil, err
	}
	flags := namespaces(p.Confinement, h)
	return &launch{path: confine.Self, args: args, env: env, cleanup: cleanup, cloneflags: flags, userns: flags != 0 && !canMakeNamespaces()}, nil
}

// namedFor puts the connection's name (when it has one) before a
// refusal's detail, so the operator knows which connection's grant
// changed.
func namedFor(name string, err error) error {
	r := blocking.Refusals(err)
	if name == "" || len(r) != 1 {
		return err
	}
	return blocking.New(r[0].Code, "connection %s: %s", name, r[0].Detail)
}

// realPaths resolves the links in the private folders' paths (oa made
// them; $OA_HOME may lie under a link), which the launcher then opens
// without following any.
func realPaths(home, tmp string) (string, string, error) {
	rh, err1 := filepath.EvalSymlinks(home)
	rt, err2 := filepath.EvalSymlinks(tmp)
	if err1 != nil || err2 != nil {
		return "", "", blocking.New(blocking.ConnectorStartFailed, "the server's private folders cannot be read")
	}
	return rh, rt, nil
}

// namespaces are the clone flags a server with profile p starts with on a
// host with h: where oa may make them, namespaceFlags, and a network
// namespace when the profile allows no network (only a loopback interface
// that is down there, so UDP, raw and every other socket family reach
// nothing either).
func namespaces(p *confine.Profile, h confine.Holders) uintptr {
	if !h.Namespaces || p.IsUnconfined() {
		return 0
	}
	flags := uintptr(namespaceFlags)
	if h.OwnNetwork(p) {
		flags |= syscall.CLONE_NEWNET
	}
	return flags
}

// canMakeNamespaces reports whether this process has CAP_SYS_ADMIN in its
// effective set (/proc/self/status CapEff), which making network, pid and
// IPC namespaces takes.
var canMakeNamespaces = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<21) != 0 // CAP_SYS_ADMIN
		}
	}
	return false
})

// missingPath names the first --read or --write path of p that does not
// exist now ("read[0]"), "" when all do.
func missingPath(p *confine.Profile) string {
	if p == nil {
		return ""
	}
	for _, f := range []struct {
		name  string
		paths []string
	}{{"read", p.Read}, {"write", p.Write}} {
		for i, path := range f.paths {
			if _, err := os.Stat(path); err != nil {
				return f.name + "[" + strconv.Itoa(i) + "]"
			}
		}
	}
	return ""
}

// privateDir returns the folder a confined server's private folders go
// in: dir (kept: it is the connection's, across starts), or, when dir is
// "", a new temporary folder removed once the server has ended.
func privateDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, blocking.New(blocking.ConnectorStartFailed, "the server's private folders cannot be made")
		}
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "oa-confined-")
	if err != nil {
		return "", nil, blocking.New(blocking.ConnectorStartFailed, "the server's private folders cannot be made")
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// withVar sets NAME=value in env, replacing any earlier entry.
func withVar(env []string, name, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// lookupIn returns NAME's value in env.
func lookupIn(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Enforcement is how a start of a program confined by profile is
// enforced on this host, or confinement_unavailable when it cannot be:
// what `oa connection verify` prints.
func Enforcement(profile *confine.Profile) (confine.Level, error) {
	abi, err := confine.Require(profile)
	if err != nil {
		return confine.Level{}, err
	}
	return confine.LevelOf(profile, abi, holders()), nil
}

// holders is what this host offers a confined start besides Landlock.
func holders() confine.Holders {
	h := cgroupHolders()
	h.Namespaces = mayMakeNamespaces()
	h.Seccomp = confine.SeccompSupported()
	return h
}

// cgroupHolders reports which limits a tree's cgroup can hold: the
// controllers enabled for the cgroups oa makes.
func cgroupHolders() confine.Holders {
	parent := CgroupParent()
	if parent == "" {
		return confine.Holders{}
	}
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return confine.Holders{}
	}
	var h confine.Holders
	for _, c := range strings.Fields(string(b)) {
		h.CgroupPids = h.CgroupPids || c == "pids"
		h.CgroupMemory = h.CgroupMemory || c == "memory"
	}
	return h
}

// limitCgroup writes the profile's process and memory bounds into the
// tree's cgroup where its controllers are there (the files exist).
func limitCgroup(dir string, p *confine.Profile) {
	if dir == "" || p.IsUnconfined() {
		return
	}
	var lim confine.Limits
	if p != nil {
		lim = p.Limits
	}
	lim = lim.Effective()
	for file, v := range map[string]int64{"pids.max": lim.Processes, "memory.max": lim.MemoryBytes} {
		path := filepath.Join(dir, file)
		if _, err := os.Stat(path); err == nil {
			_ = os.WriteFile(path, []byte(strconv.FormatInt(v, 10)), 0)
		}
	}
}
