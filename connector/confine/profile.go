package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine/launcher"
)

// Profile is a connection's confinement profile as recorded in its signed
// revision and in the plan. The zero Profile is the default: the server
// reads what running a program needs (DefaultReadPaths, its executable and
// interpreter), writes only its private state and temporary folders, opens
// no TCP connection and binds no TCP port, with DefaultLimits. Read and
// Write add exactly the paths they name; Net opens TCP; Unconfined turns
// confinement off and takes none of the others.
type Profile struct {
	// Unconfined runs the server with oa's full rights: no Landlock, no
	// limits. It is recorded, planned and shown as such.
	Unconfined bool `json:"unconfined,omitempty"`
	// Read are absolute paths (files or folders, the folder's whole tree)
	// the server may read and execute.
	Read []string `json:"read,omitempty"`
	// Write are absolute paths the server may read, write, create in,
	// remove from and rename within.
	Write []string `json:"write,omitempty"`
	// Net is "" (no TCP at all, the default), NetAny, or a sorted
	// comma-separated list of TCP ports the server may connect to.
	Net string `json:"net,omitempty"`
	// Limits bound the server's resources; a zero field is its default.
	Limits Limits `json:"limits,omitzero"`
}

// NetAny is the Net value that leaves TCP unrestricted.
const NetAny = launcher.NetAny

// Limits bound what a confined server's process tree may use. A zero
// field means the default of DefaultLimits.
type Limits struct {
	// OpenFiles is RLIMIT_NOFILE of every process of the tree.
	OpenFiles int64 `json:"openFiles,omitempty"`
	// Processes is pids.max of the tree's cgroup, where the host gives the
	// tree a cgroup with the pids controller.
	Processes int64 `json:"processes,omitempty"`
	// MemoryBytes is RLIMIT_AS (address space) of every process of the
	// tree, and memory.max of its cgroup where the memory controller is
	// there.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

// DefaultLimits are the limits of a profile that sets none.
var DefaultLimits = Limits{OpenFiles: 1024, Processes: 256, MemoryBytes: 4 << 30}

// limitBounds are the smallest and largest value each limit may be set to.
var limitBounds = map[string][2]int64{
	"openFiles":   {16, 1 << 20},
	"processes":   {1, 1 << 16},
	"memoryBytes": {64 << 20, 1 << 40},
}

// Effective returns the limits with defaults filled in.
func (l Limits) Effective() Limits {
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	if l.Processes == 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	return l
}

// IsDefault reports whether p is the default profile (nil or zero).
func (p *Profile) IsDefault() bool {
	return p == nil || (!p.Unconfined && len(p.Read) == 0 && len(p.Write) == 0 && p.Net == "" && p.Limits == Limits{})
}

// IsUnconfined reports whether the profile turns confinement off. A nil
// profile is the default, which confines.
func (p *Profile) IsUnconfined() bool { return p != nil && p.Unconfined }

// ParseNet reads a --net value: "none", "any" or a comma-separated list
// of TCP ports. It returns the recorded form: "" for none, NetAny, or the
// ports sorted, each once.
func ParseNet(s string) (string, error) {
	switch strings.TrimSpace(s) {
	case "", "none":
		return "", nil
	case NetAny:
		return NetAny, nil
	}
	ports, err := parsePorts(s)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = strconv.Itoa(int(p))
	}
	return strings.Join(parts, ","), nil
}

// parsePorts reads a comma-separated port list, sorted and deduplicated.
func parsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(part), 10, 16)
		if err != nil || n == 0 {
			return nil, errors.New("--net is none, any, or comma-separated TCP ports 1-65535")
		}
		ports = append(ports, uint16(n))
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// Ports returns the TCP ports a port-list Net allows (nil for none or any).
func (p *Profile) Ports() []uint16 {
	if p == nil || p.Net == "" || p.Net == NetAny {
		return nil
	}
	ports, _ := parsePorts(p.Net)
	return ports
}

// NetDescription is Net as the CLI spells it: none, any or the ports.
func (p *Profile) NetDescription() string {
	if p == nil || p.Net == "" {
		return "none"
	}
	return p.Net
}

// ParseSize reads a memory size: a number of bytes, or one with a K, M, G
// or T suffix (powers of 1024; "KiB", "MB" and the like read the same).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if t != "" {
		if i := strings.IndexByte("KMGT", t[len(t)-1]); i >= 0 {
			shift, t = 10*(i+1), t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, errors.New("a memory size is a positive number of bytes, or one with a K, M, G or T suffix")
	}
	return n << shift, nil
}

// Normalize makes every path absolute, clean and real (symbolic links
// resolved, as the path is when the connection is added), in place,
// keeping the order given: each start then opens the recorded path
// without following any link (ExactPaths), so a grant can never be
// turned into a link to elsewhere. A path that does not exist is left
// absolute, for Check to refuse.
func (p *Profile) Normalize() error {
	for _, list := range [][]string{p.Read, p.Write} {
		for i, path := range list {
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			list[i] = abs
		}
	}
	return nil
}

// CheckOptions are what Check holds a profile against.
type CheckOptions struct {
	// Home is $OA_HOME: no path may be it, inside it or above it, so no
	// server can reach the host key or database.
	Home string
	// NoProcess is true for a connection that starts no local program
	// (the built-in sandbox, served inside oa, or a server oa reaches by
	// URL), which takes no confinement settings.
	NoProcess bool
}

// Check refuses (confinement_invalid) a profile oa cannot record: a
// relative or missing path, a path that would expose $OA_HOME, a path
// given twice, a bad Net, a limit outside its bounds, Unconfined with any
// other setting, or any setting on an in-process connection. Each refusal
// is located at its field (confinement.read[0] …) and names no path.
func (p *Profile) Check(opts CheckOptions) blocking.List {
	if p.IsDefault() {
		return nil
	}
	var refused blocking.List
	bad := func(path, format string, args ...any) {
		at := "confinement"
		if path != "" {
			at += "." + path
		}
		refused = append(refused, blocking.New(blocking.ConfinementInvalid, format, args...).At("", at))
	}
	if opts.NoProcess {
		bad("", "the connection starts no local program (the built-in sandbox runs inside oa); confinement flags apply to a server started from a command")
		return refused
	}
	if p.Unconfined {
		if len(p.Read) > 0 || len(p.Write) > 0 || p.Net != "" || p.Limits != (Limits{}) {
			bad("unconfined", "--unconfined takes no --read, --write, --net or limits")
		}
		return refused
	}
	seen := map[string]bool{}
	for _, field := range []struct {
		name  string
		paths []string
	}{{"read", p.Read}, {"write", p.Write}} {
		for i, path := range field.paths {
			at := fmt.Sprintf("%s[%d]", field.name, i)
			switch {
			case !filepath.IsAbs(path) || filepath.Clean(path) != path:
				bad(at, "--%s takes an absolute, clean path", field.name)
			case seen[path]:
				bad(at, "the path is given twice")
			case !exists(path):
				bad(at, "the --%s path does not exist; create it first", field.name)
			case exposesHome(path, opts.Home):
				bad(at, "the --%s path is $OA_HOME, inside it or above it: the server would reach the host key and database", field.name)
			}
			seen[path] = true
		}
	}
	refused = append(refused, nestedGrants(p)...)
	if p.Net != "" {
		if canon, err := ParseNet(p.Net); err != nil || canon != p.Net {
			bad("net", "--net is none, any, or comma-separated TCP ports 1-65535, recorded sorted")
		}
	}
	for name, v := range map[string]int64{"openFiles": p.Limits.OpenFiles, "processes": p.Limits.Processes, "memoryBytes": p.Limits.MemoryBytes} {
		if b := limitBounds[name]; v != 0 && (v < b[0] || v > b[1]) {
			bad("limits."+name, "the limit is outside %d..%d", b[0], b[1])
		}
	}
	slices.SortFunc(refused, func(a, b *blocking.Error) int { return strings.Compare(a.Path, b.Path) })
	return refused
}

// nestedGrants refuses a --read path inside a --write path or the other
// way round: the server could replace the inner one (it may write in the
// outer) with a link to elsewhere, and the two would grant different
// rights to one file. The same access nested is allowed: it adds nothing.
func nestedGrants(p *Profile) blocking.List {
	var refused blocking.List
	for i, r := range p.Read {
		for j, w := range p.Write {
			if r != w && (launcher.Within(r, w) || launcher.Within(w, r)) { // the same path is "given twice"
				refused = append(refused, blocking.New(blocking.ConfinementInvalid,
					"read[%d] and write[%d] lie one inside the other with different access; give the folder once, with the access it needs", i, j).At("", fmt.Sprintf("confinement.read[%d]", i)))
			}
		}
	}
	return refused
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exposesHome reports whether path is home, inside it or above it, as
// written or with links resolved.
func exposesHome(path, home string) bool {
	if home == "" {
		return false
	}
	overlap := func(a, b string) bool { return launcher.Within(a, b) || launcher.Within(b, a) }
	absHome, err := filepath.Abs(home)
	if err != nil {
		return true
	}
	if overlap(path, absHome) {
		return true
	}
	rp, err1 := filepath.EvalSymlinks(path)
	rh, err2 := filepath.EvalSymlinks(absHome)
	return err1 == nil && err2 == nil && overlap(rp, rh)
}
