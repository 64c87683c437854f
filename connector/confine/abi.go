package confine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine/launcher"
)

// ABIMaxEnv caps the Landlock ABI oa uses at a lower number than the
// kernel's (never a higher one): a kernel that lacks a feature can then be
// tried on one that has it. Tests use it to see the refusal of an old
// kernel on this one.
const ABIMaxEnv = "OA_LANDLOCK_ABI_MAX"

// maxRulesetABI is the newest Landlock ABI whose rights the ruleset is
// built with; a newer kernel is used at this level.
const maxRulesetABI = 7

// The ABI each part of a confined profile needs.
const (
	// abiFilesystem: the filesystem rules, including truncate (ABI 3), so
	// that a file the server may only read cannot be truncated either.
	abiFilesystem = 3
	// abiTCP: TCP connect and bind rules (--net none or a port list).
	abiTCP = 4
	// abiScoped: signals and abstract unix sockets scoped to the server's
	// own domain, so it cannot signal oa or reach an abstract socket of
	// another program.
	abiScoped = launcher.ABIScoped
)

// KernelABI is the Landlock ABI this process can use: 0 where there is
// none (not Linux, Landlock not built or not enabled), capped by
// ABIMaxEnv and at maxRulesetABI.
func KernelABI() int {
	abi := kernelABI()
	if v, ok := os.LookupEnv(ABIMaxEnv); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 && n < abi {
			abi = n
		}
	}
	return min(abi, maxRulesetABI)
}

// need is one part of a profile and the ABI it needs.
type need struct {
	abi  int
	what string
}

// needs lists what enforcing p takes from the kernel.
func needs(p *Profile) []need {
	out := []need{{abiFilesystem, "the filesystem rules"}}
	if p == nil || p.Net != NetAny {
		out = append(out, need{abiTCP, "the TCP rules of --net " + p.NetDescription()})
	}
	return append(out, need{abiScoped, "signal and abstract unix socket scoping"})
}

// Require returns the Landlock ABI a confined start of p is built for, or
// confinement_unavailable naming every piece this kernel lacks. An
// unconfined profile needs nothing (ABI 0).
func Require(p *Profile) (int, error) {
	if p.IsUnconfined() {
		return 0, nil
	}
	if runtime.GOOS != "linux" {
		return 0, blocking.New(blocking.ConfinementUnavailable, "confinement needs Linux Landlock; this host runs %s", runtime.GOOS)
	}
	abi := KernelABI()
	if abi == 0 {
		return 0, blocking.New(blocking.ConfinementUnavailable, "this kernel offers no Landlock (not built in, or not enabled at boot)")
	}
	var missing []string
	for _, n := range needs(p) {
		if abi < n.abi {
			missing = append(missing, fmt.Sprintf("ABI %d for %s", n.abi, n.what))
		}
	}
	if len(missing) > 0 {
		return 0, blocking.New(blocking.ConfinementUnavailable, "Landlock %s needed; this kernel offers ABI %d", strings.Join(missing, ", "), abi)
	}
	return abi, nil
}
