package confine

import (
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// kernelABI asks the kernel for its Landlock ABI. As go-landlock does, an
// ABI of 6 or more whose signal-scoping fix (errata bit 2) is missing is
// read as 5.
func kernelABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return v
}

// SeccompSupported reports whether the kernel takes seccomp filters.
var SeccompSupported = sync.OnceValue(seccomp.Supported)
