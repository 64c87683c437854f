package coordinator_test

import (
	"testing"
	"time"

	"github.com/oa-dev/oa/testkit/cputime"
)

// cpuMeter reports the CPU time a benchmark's operations take in this
// process (the coordinator, its in-process sandbox and the benchmark's
// client) and in its children (the evaluation workers), which the
// machine's load does not inflate as it does wall time.
type cpuMeter struct{ self, children time.Duration }

func startCPU() cpuMeter { return cpuMeter{cputime.Self(), cputime.Children()} }

// report adds cpu-ms/op and worker-cpu-ms/op for the b.N operations since m.
func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(cputime.PerOp(cputime.Self()-m.self, b.N), "cpu-ms/op")
	b.ReportMetric(cputime.PerOp(cputime.Children()-m.children, b.N), "worker-cpu-ms/op")
}
