package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/fleet/fleettest"
	"github.com/oa-dev/oa/interoptest"
)

// fleetBenchParallel is how many host processes run at once.
const fleetBenchParallel = 8

// runAll runs one process per argument list, fleetBenchParallel at a time,
// and fails b when any exits non-zero.
func runAll(b *testing.B, cmds []*exec.Cmd) {
	b.Helper()
	sem := make(chan struct{}, fleetBenchParallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for _, c := range cmds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if out, err := c.CombinedOutput(); err != nil {
				mu.Lock()
				failed = fmt.Errorf("%v: %v\n%s", c.Args, err, out)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
}

// BenchmarkFleetProvision provisions N fresh hosts (each `oa provision`,
// its own process and $OA_HOME, 8 at a time) from one loopback registry,
// and pulls the same release N times with the stock `oras pull`, side by
// side. It reports registry requests and response bytes per host; the
// requests per host stay the same as N grows.
func BenchmarkFleetProvision(b *testing.B) {
	oa := oaBinary(b)
	oras := interoptest.Tool(b, "oras")
	f := fleettest.New(b)
	for _, n := range []int{10, 50, 100} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("h%03d", i)
		}
		specFile := f.WriteSpec(f.Spec(f.Release, ids, ""))
		if _, errOut, code := oaProc(b, "", "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile); code != 0 {
			b.Fatalf("publish: %s", errOut)
		}
		b.Run(fmt.Sprintf("oa-provision/hosts=%d", n), func(b *testing.B) {
			var requests, bytes int64
			for b.Loop() {
				b.StopTimer()
				var cmds []*exec.Cmd
				for _, id := range ids {
					h := f.NewHost(id, fleettest.HostOptions{PreApprove: true})
					c := exec.Command(oa, "provision", "--envelope", f.Repository+":"+fleet.EnvelopeTag(id))
					c.Env = append(os.Environ(), "OA_HOME="+h.Home)
					cmds = append(cmds, c)
				}
				f.Registry.ResetCounters()
				b.StartTimer()
				runAll(b, cmds)
				requests += f.Registry.Requests()
				bytes += f.Registry.BytesServed()
			}
			b.ReportMetric(float64(requests)/float64(b.N*n), "requests/host")
			b.ReportMetric(float64(bytes)/float64(b.N*n), "bytes/host")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*n), "ms/host")
		})
		b.Run(fmt.Sprintf("oras-pull/hosts=%d", n), func(b *testing.B) {
			env := interoptest.Env(b)
			var requests, bytes int64
			for b.Loop() {
				b.StopTimer()
				var cmds []*exec.Cmd
				for range ids {
					c := exec.Command(oras, "pull", "--plain-http", "-o", filepath.Join(b.TempDir(), "out"), f.Release)
					c.Env = env
					cmds = append(cmds, c)
				}
				f.Registry.ResetCounters()
				b.StartTimer()
				runAll(b, cmds)
				requests += f.Registry.Requests()
				bytes += f.Registry.BytesServed()
			}
			b.ReportMetric(float64(requests)/float64(b.N*n), "requests/host")
			b.ReportMetric(float64(bytes)/float64(b.N*n), "bytes/host")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*n), "ms/host")
		})
	}
}
