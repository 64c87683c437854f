package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/oa-dev/oa/testkit/cputime"
	"github.com/oa-dev/oa/testkit/fleettest"
)

// benchFleet is the fleet of a fleet benchmark: oa built, a fleet of
// OA_BENCH_HOSTS hosts (default 10,000) on one loopback registry, their
// ids and the fleet file.
func benchFleet(b *testing.B) (oa string, f *fleettest.Fleet, ids []string, specFile string) {
	n := 10000
	if v := os.Getenv("OA_BENCH_HOSTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("OA_BENCH_HOSTS=%q", v)
		}
	}
	oa = oaBinary(b)
	f = fleettest.New(b)
	ids = make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("h%05d", i)
	}
	return oa, f, ids, f.WriteSpec(f.Spec(f.Release, ids, ""))
}

// BenchmarkFleetScale times `oa fleet publish` and `oa fleet status`, each
// its own process, for a fleet of OA_BENCH_HOSTS hosts (default 10,000;
// issue 26's scale) on one loopback registry (testkit/registrytest, the
// real distribution/v3, in this process): the first publish (every
// envelope new: run it with -benchtime 1x), a republish of the unchanged
// fleet, and the status of every host, each host having pushed a signed
// status. It reports ms per command and registry requests per host.
//
//	OA_BENCH_HOSTS=10000 go test ./cmd/oa -run '^$' -bench BenchmarkFleetScale -benchtime 1x -count 3 -timeout 30m
func BenchmarkFleetScale(b *testing.B) {
	oa, f, ids, specFile := benchFleet(b)
	f.PushStatuses(ids, fleettest.OtherKey(b), time.Now())
	command := func(args ...string) *exec.Cmd {
		c := exec.Command(oa, args...)
		c.Env = append(os.Environ(), "COSIGN_PASSWORD="+fleettest.KeyPassword)
		return c
	}
	publish := func() *exec.Cmd { return command("fleet", "publish", "--fleet", specFile, "--key", f.KeyFile) }
	// The wall time depends on what else the machine runs; the CPU time
	// of the oa process (user+sys, from its exit status) and of the
	// registry (this process's rusage over the command, nearly all of it
	// the registry's) say what the work costs on any machine.
	var requests int64
	var oaCPU, registryCPU time.Duration
	run := func(b *testing.B, cmd *exec.Cmd) {
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
	measure := func(b *testing.B, cmd func() *exec.Cmd) {
		for b.Loop() {
			run(b, cmd())
		}
		report(b)
	}
	b.Run("publish-new", func(b *testing.B) {
		// Every envelope new each round: a new fleet name would need new
		// hosts; instead each round publishes to a repository not yet
		// written, named by the round.
		round := 0
		for b.Loop() {
			b.StopTimer()
			round++
			spec := f.WriteSpec(f.SpecIn(fmt.Sprintf("%s/fleet/new%d", f.Registry.Host(), round), f.Release, ids, ""))
			b.StartTimer()
			run(b, command("fleet", "publish", "--fleet", spec, "--key", f.KeyFile))
		}
		report(b)
	})
	b.Run("publish-unchanged", func(b *testing.B) {
		b.StopTimer()
		runOne(b, publish())
		b.StartTimer()
		measure(b, publish)
	})
	b.Run("status", func(b *testing.B) {
		measure(b, func() *exec.Cmd { return command("fleet", "status", "--fleet", specFile) })
	})
}
