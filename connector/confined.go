package connector

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

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
	// netns starts the server in a network namespace of its own.
	netns bool
}

// prepareLaunch decides how cfg's server starts: directly when its
// profile is unconfined, otherwise through the confinement launcher (this
// program run again, see package confine) with the profile resolved, its
// private folders made and passed as HOME and TMPDIR. A kernel that cannot
// enforce the profile refuses (confinement_unavailable) before anything
// starts.
func prepareLaunch(cfg Config, opts Options, env []string) (*launch, error) {
	if cfg.Confinement.IsUnconfined() {
		return &launch{path: cfg.Command, args: cfg.Args, env: env, cleanup: func() {}}, nil
	}
	abi, err := confine.Require(cfg.Confinement)
	if err != nil {
		return nil, err
	}
	exe, err := exec.LookPath(cfg.Command)
	if err != nil {
		return nil, blocking.New(blocking.ConnectorStartFailed, "the command is not found or not executable")
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return nil, blocking.New(blocking.ConnectorStartFailed, "the command's folder cannot be read")
	}
	if missing := missingPath(cfg.Confinement); missing != "" {
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
	spec := confine.Build(cfg.Confinement, abi, confine.Target{Executable: exe, PATH: lookupIn(env, "PATH"), Home: home, Tmp: tmp})
	args, err := confine.LauncherArgs(spec, exe, append([]string{cfg.Command}, cfg.Args...))
	if err != nil {
		cleanup()
		return nil, err
	}
	return &launch{path: confine.Self, args: args, env: env, cleanup: cleanup, netns: ownNetwork(cfg.Confinement)}, nil
}

// ownNetwork reports whether a server with profile p starts in a network
// namespace of its own: when the profile allows no network (--net none)
// and this process may make one (CAP_SYS_ADMIN). There the server has
// only a loopback interface that is down, so UDP, raw and every other
// socket family Landlock does not cover reach nothing either.
func ownNetwork(p *confine.Profile) bool {
	return !p.IsUnconfined() && p.NetDescription() == "none" && canMakeNetns()
}

// canMakeNetns reports whether this process has CAP_SYS_ADMIN in its
// effective set (/proc/self/status CapEff), which unsharing a network
// namespace takes.
var canMakeNetns = sync.OnceValue(func() bool {
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

// Enforcement is how a start of cfg's server is enforced on this host,
// or confinement_unavailable when it cannot be: what `oa connection
// verify` prints.
func Enforcement(cfg Config) (confine.Level, error) {
	switch cfg.Command {
	case SandboxCommand:
		return confine.Level{Mode: confine.ModeInProcess}, nil
	case "":
		return confine.Level{Mode: confine.ModeNoProcess}, nil
	}
	abi, err := confine.Require(cfg.Confinement)
	if err != nil {
		return confine.Level{}, err
	}
	h := cgroupHolders()
	h.NetworkNamespace = ownNetwork(cfg.Confinement)
	return confine.LevelOf(cfg.Confinement, abi, h), nil
}

// cgroupHolders reports which limits a tree's cgroup can hold: the
// controllers enabled for the cgroups oa makes.
func cgroupHolders() confine.Holders {
	parent := cgroupParent()
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
