package confine

import (
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
	return min(abi, launcher.MaxABI)
}

// Require returns the Landlock ABI a confined start of p is built for, or
// confinement_unavailable when the kernel offers no Landlock at all: a
// confined server needs at least the filesystem rules (ABI 1). What an
// older ABI cannot hold is held by the other layers where the host has
// them (see LevelOf); a host policy's minimum refuses what is still
// missing (Level.CheckMinimum). An unconfined profile needs nothing
// (ABI 0).
func Require(p *Profile) (int, error) {
	if p.IsUnconfined() {
		return 0, nil
	}
	if runtime.GOOS != "linux" {
		return 0, blocking.New(blocking.ConfinementUnavailable, "confinement needs Linux Landlock; this host runs %s", runtime.GOOS)
	}
	abi := KernelABI()
	if abi < launcher.ABIFilesystem {
		return 0, blocking.New(blocking.ConfinementUnavailable, "this kernel offers no Landlock (not built in, or not enabled at boot)")
	}
	return abi, nil
}
