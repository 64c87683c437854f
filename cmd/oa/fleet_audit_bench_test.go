package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/oa-dev/oa/testkit/cputime"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// BenchmarkFleetAudit times `oa fleet audit`, its own process, for a
// fleet of OA_BENCH_HOSTS hosts (default 10,000) on one loopback registry
// (registrytest, in this process), each host having published a log
// checkpoint cosigned by one witness: the first audit (no state: every
// host trusted on first sight, the state written) and an audit with that
// state (each host compared with the checkpoint seen). It reports ms per
// command, the CPU of oa and of the registry, and requests per host.
//
//	OA_BENCH_HOSTS=10000 go test ./cmd/oa -run '^$' -bench BenchmarkFleetAudit -benchtime 1x -count 3 -timeout 30m
func BenchmarkFleetAudit(b *testing.B) {
	oa, f, ids, specFile := benchFleet(b)
	f.PushLogs(ids, fleettest.OtherKey(b), fleettest.NewWitness(b, "witness.example"), time.Now())
	var requests int64
	var oaCPU, registryCPU time.Duration
	run := func(b *testing.B, state string) {
		cmd := exec.Command(oa, "fleet", "audit", "--fleet", specFile, "--state", state, "--stale", "24h")
		b.StopTimer()
		f.Registry.ResetCounters()
		before := cputime.Self()
		b.StartTimer()
		runOne(b, cmd)
		b.StopTimer()
		registryCPU += cputime.Self() - before
		oaCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		requests += f.Registry.Requests()
		b.StartTimer()
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(requests)/float64(b.N*len(ids)), "requests/host")
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/command")
		b.ReportMetric(float64(oaCPU.Milliseconds())/float64(b.N), "oa-cpu-ms/command")
		b.ReportMetric(float64(registryCPU.Milliseconds())/float64(b.N), "registry-cpu-ms/command")
		requests, oaCPU, registryCPU = 0, 0, 0
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			run(b, b.TempDir())
		}
		report(b)
	})
	b.Run("again", func(b *testing.B) {
		state := b.TempDir()
		b.StopTimer()
		runOne(b, exec.Command(oa, "fleet", "audit", "--fleet", specFile, "--state", state, "--stale", "24h"))
		b.StartTimer()
		for b.Loop() {
			run(b, state)
		}
		report(b)
	})
}
