// Package cputime reads the CPU time (user + system) of the benchmark's
// process and of its children, the figure the machine's load does not
// inflate as it does wall time. Benchmarks report it beside ns/op.
package cputime

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Self is this process's CPU time so far (0 if the kernel does not say).
func Self() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// Reaped is the CPU time of this process's children that have ended and
// been waited for (a launcher and the server it became, a finished
// command).
func Reaped() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

// Children is the CPU time of every child of this process so far: the
// reaped ones and the live ones (a pool's workers).
func Children() time.Duration { return Reaped() + Live() }

// Live is the CPU time so far of this process's children that are still
// running, read from /proc (clock ticks of 10 ms, so measure many
// operations).
func Live() time.Duration {
	var total time.Duration
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // ended since the glob
		}
		// pid (comm) state ppid ... utime stime: fields 4, 14 and 15; the
		// command name may hold spaces and parentheses, so split after the
		// last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 || f[1] != me {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+s) * 10 * time.Millisecond
	}
	return total
}

// PerOp is d spread over n operations, in milliseconds (for
// testing.B.ReportMetric).
func PerOp(d time.Duration, n int) float64 { return float64(d) / float64(n) / 1e6 }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
