package launcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// init makes this program the launcher when it was started as one (see
// the package comment). It runs before main (and before a test binary's
// flags are read) and does not return.
func init() {
	if len(os.Args) < 5 || os.Args[1] != Arg {
		return
	}
	err := launch(os.Args[2], os.Args[3], os.Args[4:])
	// Only the operator's stderr sees this; the server never started.
	fmt.Fprintf(os.Stderr, "oa: confined start failed: %v\n", err)
	os.Exit(ExitFailed)
}

// launch applies the spec to this process and executes the server; it
// returns only on failure.
func launch(specJSON, executable string, argv []string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(specJSON)))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	if err := setLimit(syscall.RLIMIT_NOFILE, s.OpenFiles); err != nil {
		return fmt.Errorf("open files limit: %w", err)
	}
	if err := setLimit(syscall.RLIMIT_AS, s.MemoryBytes); err != nil {
		return fmt.Errorf("memory limit: %w", err)
	}
	if err := restrict(&s); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return syscall.Exec(executable, argv, os.Environ())
}

// setLimit lowers both the soft and the hard limit of resource to n (or
// to the hard limit already in place, if that is lower), so the server
// cannot raise it again.
func setLimit(resource int, n int64) error {
	if n <= 0 {
		return errors.New("no limit given")
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(resource, &cur); err != nil {
		return err
	}
	v := min(uint64(n), cur.Max)
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: v, Max: v})
}

// configs are go-landlock's configurations by ABI.
var configs = map[int]landlock.Config{3: landlock.V3, 4: landlock.V4, 5: landlock.V5, 6: landlock.V6, 7: landlock.V7}

// restrict builds the ruleset of s and restricts this process (all its
// threads, with no_new_privs) to it: every filesystem right the ABI
// knows is handled, TCP connect and bind unless the profile allows any,
// and signals and abstract unix sockets scoped.
func restrict(s *Spec) error {
	base, ok := configs[s.ABI]
	if !ok || s.ABI < ABIScoped {
		return fmt.Errorf("no ruleset for ABI %d", s.ABI)
	}
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	if s.Net != NetAny {
		cfg.HandledAccessNet = base.HandledAccessNet
	}
	var rules []landlock.Rule
	for _, p := range s.Read {
		if isDir(p) {
			rules = append(rules, landlock.RODirs(p))
		} else {
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	for _, p := range s.Write {
		if isDir(p) {
			rules = append(rules, landlock.RWDirs(p).WithRefer())
		} else {
			rules = append(rules, landlock.RWFiles(p))
		}
	}
	if s.Net != NetAny && s.Net != "" {
		ports, err := parsePorts(s.Net)
		if err != nil {
			return err
		}
		for _, port := range ports {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	return cfg.Restrict(rules...)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// parsePorts reads the spec's port list (canonical: confine wrote it).
func parsePorts(net string) ([]uint16, error) {
	var ports []uint16
	for part := range strings.SplitSeq(net, ",") {
		n, err := strconv.ParseUint(part, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("the spec's port list %q is not canonical", net)
		}
		ports = append(ports, uint16(n))
	}
	return ports, nil
}
