package confine

import (
	"fmt"
	"strings"
)

// Level is what a start of a connection's server is enforced with on this
// host, as `oa connection verify` prints it.
type Level struct {
	// Mode is "confined", "unconfined", or "in-process" (the built-in
	// sandbox, which runs inside oa and is not a separate program).
	Mode string `json:"mode"`
	// ABI is the Landlock ABI the ruleset is built for.
	ABI int `json:"landlockAbi,omitempty"`
	// Rules name what Landlock enforces: filesystem, tcp, scoped.
	Rules []string `json:"rules,omitempty"`
	// Limits name each resource bound and how it is held, or why not.
	Limits []string `json:"limits,omitempty"`
}

// Levels of Mode.
const (
	ModeConfined   = "confined"
	ModeUnconfined = "unconfined"
	ModeInProcess  = "in-process"
	// ModeNoProcess is a connection that starts no local program (one
	// reached by URL): there is nothing of oa's host to confine.
	ModeNoProcess = "no-local-process"
)

// Holders is how the host can hold the limits of a tree: whether the
// tree's cgroup has the pids and memory controllers.
type Holders struct {
	CgroupPids, CgroupMemory bool
	// NetworkNamespace: the server starts in a network namespace of its
	// own (--net none where oa may make one).
	NetworkNamespace bool
}

// LevelOf describes the enforcement of p at abi with holders.
func LevelOf(p *Profile, abi int, h Holders) Level {
	if p.IsUnconfined() {
		return Level{Mode: ModeUnconfined}
	}
	l := Level{Mode: ModeConfined, ABI: abi, Rules: []string{"filesystem"}}
	if p.NetDescription() != NetAny {
		l.Rules = append(l.Rules, "tcp "+p.NetDescription())
	}
	if h.NetworkNamespace {
		l.Rules = append(l.Rules, "own network namespace (no UDP or other sockets either)")
	}
	l.Rules = append(l.Rules, "signals and abstract sockets scoped")
	lim := Limits{}
	if p != nil {
		lim = p.Limits
	}
	lim = lim.Effective()
	l.Limits = append(l.Limits, fmt.Sprintf("open files %d (rlimit)", lim.OpenFiles))
	mem := fmt.Sprintf("memory %s (rlimit address space", size(lim.MemoryBytes))
	if h.CgroupMemory {
		mem += ", cgroup memory.max"
	}
	l.Limits = append(l.Limits, mem+")")
	if h.CgroupPids {
		l.Limits = append(l.Limits, fmt.Sprintf("processes %d (cgroup pids.max)", lim.Processes))
	} else {
		l.Limits = append(l.Limits, fmt.Sprintf("processes %d not held: no cgroup with the pids controller", lim.Processes))
	}
	return l
}

// String is the level on one line.
func (l Level) String() string {
	if l.Mode != ModeConfined {
		return l.Mode
	}
	return fmt.Sprintf("confined by Landlock ABI %d: %s; %s", l.ABI, strings.Join(l.Rules, ", "), strings.Join(l.Limits, ", "))
}

// size prints a byte count in the largest whole binary unit.
func size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// Describe is the profile in one line, as the approval text and `oa
// connection show` print it.
func Describe(p *Profile) string {
	if p.IsUnconfined() {
		return "UNCONFINED: runs with oa's full rights"
	}
	if p.IsDefault() {
		return "default: reads system folders and its program, writes only its private folders, no TCP"
	}
	parts := []string{"default"}
	if len(p.Read) > 0 {
		parts = append(parts, "+read "+strings.Join(p.Read, ", "))
	}
	if len(p.Write) > 0 {
		parts = append(parts, "+write "+strings.Join(p.Write, ", "))
	}
	parts = append(parts, "tcp "+p.NetDescription())
	lim := p.Limits.Effective()
	parts = append(parts, fmt.Sprintf("open files %d, processes %d, memory %s", lim.OpenFiles, lim.Processes, size(lim.MemoryBytes)))
	return strings.Join(parts, "; ")
}
