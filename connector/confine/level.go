package confine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine/launcher"
)

// The guarantees a confined start can hold, by name. Which hold depends
// on the profile and on what the host offers (Host): each is held by
// whatever mechanism the kernel has, and a level names those held.
const (
	// GuaranteeFilesystem: the server reads only the system's folders,
	// its program and its --read paths, and writes only its private
	// folders and its --write paths (Landlock, from ABI 1; below ABI 3
	// the seccomp filter refuses truncate by name, which Landlock does
	// not cover there).
	GuaranteeFilesystem = "filesystem"
	// GuaranteeNetwork: the profile's --net holds. None: no socket but
	// unix and netlink ones (the seccomp filter; and an own network
	// namespace where oa may make one). A port list: TCP only to those
	// ports (Landlock from ABI 4). Any: nothing to hold.
	GuaranteeNetwork = "network"
	// GuaranteePrivileges: the server holds no capability, cannot gain
	// one (no_new_privs, empty bounding set), and the seccomp filter
	// refuses what a tool server never needs (launcher.Denials).
	GuaranteePrivileges = "privileges"
	// GuaranteeSignals: the server cannot signal a process outside its
	// own tree (Landlock scoping from ABI 6, or an own pid namespace).
	GuaranteeSignals = "signals"
	// GuaranteeAbstractSockets: the server cannot reach another program's
	// abstract unix socket (Landlock scoping from ABI 6, or an own network
	// namespace).
	GuaranteeAbstractSockets = "abstract-sockets"
	// GuaranteeProcesses: the server cannot see, renice or re-pin a
	// process outside its tree (an own pid namespace).
	GuaranteeProcesses = "processes"
	// GuaranteeIPC: the server shares no System V IPC with the host (an
	// own IPC namespace, or SysV IPC refused by the seccomp filter).
	GuaranteeIPC = "ipc"
	// GuaranteeSocketFolders: the folders where the host's programs keep
	// their unix sockets (launcher.SocketFolders) and $OA_HOME are empty
	// to the server, but for what its profile grants in them (an own
	// mount namespace): Landlock below ABI 9 does not check connecting to
	// a unix socket by path.
	GuaranteeSocketFolders = "socket-folders"
)

// Guarantees are every guarantee name, in the order a level lists them.
var Guarantees = []string{GuaranteeFilesystem, GuaranteeNetwork, GuaranteePrivileges, GuaranteeSignals, GuaranteeAbstractSockets, GuaranteeProcesses, GuaranteeIPC, GuaranteeSocketFolders}

// DefaultMinimum is the least a host holds a confined connection to when
// its policy sets no minimum: the filesystem and network guarantees of
// the default profile.
var DefaultMinimum = []string{GuaranteeFilesystem, GuaranteeNetwork}

// Level is what a start of a connection's server is enforced with on this
// host, as `oa connection verify` prints it.
type Level struct {
	// Mode is "confined", "unconfined", or "in-process" (the built-in
	// sandbox, which runs inside oa and is not a separate program).
	Mode string `json:"mode"`
	// ABI is the Landlock ABI the ruleset is built for.
	ABI int `json:"landlockAbi,omitempty"`
	// Guarantees are the guarantees held (Guarantees' order).
	Guarantees []string `json:"guarantees,omitempty"`
	// NotHeld names each guarantee not held and why ("processes: no pid
	// namespace: …").
	NotHeld []string `json:"notHeld,omitempty"`
	// Filter is the seccomp filter's version (launcher.FilterVersion).
	Filter string `json:"seccomp,omitempty"`
	// Rules name how each guarantee is held.
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

// Holders is what the host offers a confined start besides Landlock.
type Holders struct {
	// CgroupPids and CgroupMemory: the tree's cgroup has the pids and
	// memory controllers.
	CgroupPids, CgroupMemory bool
	// Namespaces: oa may start the server in pid, mount, IPC and network
	// namespaces of its own (it holds CAP_SYS_ADMIN, or it may make them
	// in a user namespace of the server's own).
	Namespaces bool
	// Seccomp: the kernel takes seccomp filters.
	Seccomp bool
}

// OwnNetwork reports whether a start of p on a host with h gets a network
// namespace of its own: when the profile allows no network and oa may
// make one. There the server has only a loopback interface that is down.
func (h Holders) OwnNetwork(p *Profile) bool {
	return h.Namespaces && !p.IsUnconfined() && p.NetDescription() == "none"
}

// held is one guarantee's verdict: how it is held, or why not.
type held struct {
	name, how, whyNot string
}

// verdicts decides each guarantee of p at abi with h.
func verdicts(p *Profile, abi int, h Holders) []held {
	// either holds name by every how that is not "" (joined with "and"),
	// or, with none, not for whyNot.
	either := func(name, whyNot string, hows ...string) held {
		hows = slices.DeleteFunc(hows, func(how string) bool { return how == "" })
		if len(hows) == 0 {
			return held{name: name, whyNot: whyNot}
		}
		return held{name: name, how: strings.Join(hows, " and ")}
	}
	when := func(ok bool, how string) string {
		if ok {
			return how
		}
		return ""
	}
	// noNamespaces is why oa may make none.
	const noNamespaces = "(no CAP_SYS_ADMIN, and no user namespace allowed)"
	fs := held{name: GuaranteeFilesystem, whyNot: "this kernel offers no Landlock (not built in, or not enabled at boot)"}
	switch {
	case abi >= launcher.ABITruncate:
		fs = held{name: GuaranteeFilesystem, how: fmt.Sprintf("filesystem (Landlock ABI %d)", abi)}
	case abi >= launcher.ABIFilesystem && h.Seccomp:
		fs = held{name: GuaranteeFilesystem, how: fmt.Sprintf("filesystem (Landlock ABI %d, truncate refused by seccomp)", abi)}
	case abi >= launcher.ABIFilesystem:
		fs.whyNot = "Landlock below ABI 3 does not refuse truncate, and this kernel takes no seccomp filter"
	}
	var network held
	switch p.NetDescription() {
	case NetAny:
		network = held{name: GuaranteeNetwork, how: "network any (as the profile asks)"}
	case "none":
		network = either(GuaranteeNetwork, "no network namespace "+noNamespaces+" and no seccomp",
			when(h.OwnNetwork(p), "own network namespace"),
			when(h.Seccomp, "no socket but unix and netlink (seccomp)"))
	default:
		network = held{name: GuaranteeNetwork, how: "tcp " + p.NetDescription() + " only (Landlock)"}
		if abi < launcher.ABITCP {
			network = held{name: GuaranteeNetwork, whyNot: fmt.Sprintf("a TCP port list needs Landlock ABI %d; this kernel offers ABI %d", launcher.ABITCP, abi)}
		}
	}
	scoped := abi >= launcher.ABIScoped
	return []held{
		fs,
		network,
		{name: GuaranteePrivileges, how: "no capabilities, no_new_privs" + when(h.Seccomp, ", seccomp filter "+launcher.FilterVersion)},
		either(GuaranteeSignals, fmt.Sprintf("Landlock ABI %d scopes signals (this kernel: %d) and oa may make no pid namespace %s", launcher.ABIScoped, abi, noNamespaces),
			when(scoped, "signals scoped (Landlock)"), when(h.Namespaces, "own pid namespace")),
		either(GuaranteeAbstractSockets, fmt.Sprintf("Landlock ABI %d scopes abstract sockets (this kernel: %d) and the server has no network namespace of its own", launcher.ABIScoped, abi),
			when(scoped, "abstract sockets scoped (Landlock)"), when(h.OwnNetwork(p), "own network namespace")),
		either(GuaranteeProcesses, "oa may make no pid namespace "+noNamespaces, when(h.Namespaces, "own pid namespace")),
		either(GuaranteeIPC, "no IPC namespace and no seccomp", when(h.Namespaces, "own IPC namespace"), when(h.Seccomp, "SysV IPC refused (seccomp)")),
		either(GuaranteeSocketFolders, "oa may make no mount namespace "+noNamespaces+", and Landlock below ABI 9 does not check connecting to a unix socket",
			when(h.Namespaces, "socket folders and $OA_HOME hidden (own mount namespace)")),
	}
}

// LevelOf describes the enforcement of p at abi with h.
func LevelOf(p *Profile, abi int, h Holders) Level {
	if p.IsUnconfined() {
		return Level{Mode: ModeUnconfined}
	}
	l := Level{Mode: ModeConfined, ABI: abi}
	if h.Seccomp {
		l.Filter = launcher.FilterVersion
	}
	for _, v := range verdicts(p, abi, h) {
		if v.whyNot != "" {
			l.NotHeld = append(l.NotHeld, v.name+": "+v.whyNot)
			continue
		}
		l.Guarantees = append(l.Guarantees, v.name)
		l.Rules = append(l.Rules, v.how)
	}
	l.Limits = limitsOf(p, h)
	return l
}

// limitsOf names each resource bound of p and how h holds it.
func limitsOf(p *Profile, h Holders) []string {
	lim := Limits{}
	if p != nil {
		lim = p.Limits
	}
	lim = lim.Effective()
	out := []string{fmt.Sprintf("open files %d (rlimit)", lim.OpenFiles)}
	mem := fmt.Sprintf("memory %s (rlimit address space", size(lim.MemoryBytes))
	if h.CgroupMemory {
		mem += ", cgroup memory.max"
	}
	out = append(out, mem+")")
	if h.CgroupPids {
		return append(out, fmt.Sprintf("processes %d (cgroup pids.max)", lim.Processes))
	}
	return append(out, fmt.Sprintf("processes %d not held: no cgroup with the pids controller", lim.Processes))
}

// Holds reports whether the level holds guarantee name.
func (l Level) Holds(name string) bool { return slices.Contains(l.Guarantees, name) }

// CheckMinimum refuses (confinement_below_minimum) a confined level that
// does not hold every guarantee of minimum, naming each one missing and
// why. A level that is not confined (unconfined, in-process, no local
// process) is the policy's allow_unconfined to judge, not this.
func (l Level) CheckMinimum(minimum []string) error {
	if l.Mode != ModeConfined {
		return nil
	}
	var missing []string
	for _, name := range minimum {
		if l.Holds(name) {
			continue
		}
		why := "not held"
		for _, n := range l.NotHeld {
			if w, ok := strings.CutPrefix(n, name+": "); ok {
				why = w
			}
		}
		missing = append(missing, name+" ("+why+")")
	}
	if len(missing) == 0 {
		return nil
	}
	return blocking.New(blocking.ConfinementBelowMinimum, "this host holds the server below the policy's confinement minimum: %s", strings.Join(missing, "; "))
}

// CheckGuaranteeNames refuses a name that is not a guarantee.
func CheckGuaranteeNames(names []string) error {
	for _, n := range names {
		if !slices.Contains(Guarantees, n) {
			return fmt.Errorf("%q is not a confinement guarantee (%s)", n, strings.Join(Guarantees, ", "))
		}
	}
	return nil
}

// String is the level on one line.
func (l Level) String() string {
	if l.Mode != ModeConfined {
		return l.Mode
	}
	s := fmt.Sprintf("confined by Landlock ABI %d: %s; %s", l.ABI, strings.Join(l.Rules, ", "), strings.Join(l.Limits, ", "))
	if len(l.NotHeld) > 0 {
		s += "; not held: " + strings.Join(l.NotHeld, "; ")
	}
	return s
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
		return "default: reads system folders and its program, writes only its private folders, no network"
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

// DeniedCalls describes, one line each, what the seccomp filter of a
// start of p refuses, as `oa connection show` lists it.
func DeniedCalls(p *Profile, h Holders) []string {
	if p.IsUnconfined() {
		return nil
	}
	net := ""
	if p != nil {
		net = p.Net
	}
	spec := &launcher.Spec{Net: net, ABI: KernelABI(), OwnIPC: h.Namespaces}
	layers := launcher.Layers(spec)
	var out []string
	for _, d := range launcher.Denials {
		if d.Layer != "" && !slices.Contains(layers, d.Layer) {
			continue
		}
		line := strings.Join(d.Calls, ", ")
		if d.When != "" {
			line += " (" + d.When + ")"
		}
		out = append(out, line+": "+d.Why)
	}
	return out
}
