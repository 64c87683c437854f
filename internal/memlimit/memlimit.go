// Package memlimit holds a process to a heap budget from inside, for the
// worker processes that evaluate untrusted CUE (component's evaluation
// workers, the compiler's): CUE evaluation cannot be stopped from outside
// the goroutine running it, so the process running it is what is bounded.
package memlimit

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hold holds this process to memory bytes of heap: a Go memory limit at ¾
// of it (the collector works harder before the budget is reached), a
// watchdog that reads the heap every 2 ms and exits with exitStatus once
// it passes the budget, and RLIMIT_AS well above it (twice the budget past
// the address space already mapped) for an allocation too big and too
// quick for the watchdog, which then fails and ends the process. Only for
// processes that exist to run one bounded job.
func Hold(memory int64, exitStatus int) {
	Limit(memory)
	go func() {
		for range time.Tick(Every) {
			if Over(memory) {
				os.Exit(exitStatus)
			}
		}
	}()
}

// Limit is Hold without its watchdog, for a process that watches its heap
// (Over, every Every) only while it runs a job and waits idle between
// jobs: a watchdog ticking while nothing runs costs the process a wake-up
// every 2 ms for nothing.
func Limit(memory int64) {
	debug.SetMemoryLimit(memory * 3 / 4)
	if vm := virtualSize(); vm > 0 {
		limit := uint64(vm + 2*memory + 256<<20)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
	}
}

// Every is how often a watchdog reads the heap.
const Every = 2 * time.Millisecond

// Over reports whether the heap's objects take more than memory bytes.
func Over(memory int64) bool {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Kind() == metrics.KindUint64 && int64(sample[0].Value.Uint64()) > memory
}

// virtualSize is this process's virtual memory size in bytes (VmSize in
// /proc/self/status), or 0 when unknown.
func virtualSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
