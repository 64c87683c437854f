package coordinator_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuMeter reports the CPU time a benchmark's operations take in this
// process (the coordinator, its in-process sandbox and the benchmark's
// client) and in its children (the evaluation workers), which the
// machine's load does not inflate as it does wall time.
type cpuMeter struct{ self, children time.Duration }

func startCPU() cpuMeter { return cpuMeter{selfCPU(), allChildCPU()} }

// report adds cpu-ms/op and worker-cpu-ms/op for the b.N operations since m.
func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(selfCPU()-m.self)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(allChildCPU()-m.children)/float64(b.N)/1e6, "worker-cpu-ms/op")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// allChildCPU is the CPU time of this process's children: the reaped
// ones (childCPU) and the live ones, read from /proc (clock ticks of
// 10 ms, so over many operations).
func allChildCPU() time.Duration {
	total := childCPU()
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 4, 14 and 15.
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
