package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// runOne runs cmd and fails b when it does not exit 0.
func runOne(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}

// BenchmarkFleetPublish200 times one `oa fleet publish` process to 200
// hosts on a loopback registry: the first publish (every envelope
// written) and a republish of the unchanged fleet (nothing written). Side
// by side, `oras push` of one envelope-sized document per host, 16 at a
// time, as a script publishing the same documents with oras would.
func BenchmarkFleetPublish200(b *testing.B) {
	oa := oaBinary(b)
	oras := interoptest.Tool(b, "oras")
	f := fleettest.New(b)
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("h%03d", i)
	}
	specFile := f.WriteSpec(f.Spec(f.Release, ids, ""))
	publish := func() *exec.Cmd {
		c := exec.Command(oa, "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile)
		c.Env = append(os.Environ(), "COSIGN_PASSWORD="+fleettest.KeyPassword)
		return c
	}
	report := func(b *testing.B, requests int64) {
		b.ReportMetric(float64(requests)/float64(b.N*n), "requests/host")
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/publish")
	}
	b.Run("oa-first", func(b *testing.B) {
		var requests int64
		// Only the first round writes every envelope: run with -benchtime 1x.
		for b.Loop() {
			f.Registry.ResetCounters()
			runOne(b, publish())
			requests += f.Registry.Requests()
		}
		report(b, requests)
	})
	b.Run("oa-unchanged", func(b *testing.B) {
		runOne(b, publish())
		var requests int64
		for b.Loop() {
			f.Registry.ResetCounters()
			runOne(b, publish())
			requests += f.Registry.Requests()
		}
		report(b, requests)
	})
	b.Run("oras-push", func(b *testing.B) {
		env := interoptest.Env(b)
		dir := b.TempDir()
		doc := filepath.Join(dir, "envelope.json")
		if err := os.WriteFile(doc, make([]byte, 700), 0o600); err != nil {
			b.Fatal(err)
		}
		var requests int64
		for b.Loop() {
			var cmds []*exec.Cmd
			for _, id := range ids {
				c := exec.Command(oras, "push", "--plain-http", "--artifact-type", fleet.EnvelopeArtifactType, f.Registry.Host()+"/oras/clinics:"+fleet.EnvelopeTag(id), "envelope.json")
				c.Dir, c.Env = dir, env
				cmds = append(cmds, c)
			}
			b.StopTimer()
			f.Registry.ResetCounters()
			b.StartTimer()
			runAll(b, cmds)
			requests += f.Registry.Requests()
		}
		report(b, requests)
	})
}

// BenchmarkProvisionUnchanged times `oa provision` on a bound host with
// nothing changed (its own process each time, one after another) against
// `oras pull` of the same release.
func BenchmarkProvisionUnchanged(b *testing.B) {
	oa := oaBinary(b)
	oras := interoptest.Tool(b, "oras")
	f := fleettest.New(b)
	specFile := f.WriteSpec(f.Spec(f.Release, []string{"h01"}, ""))
	if _, errOut, code := oaProc(b, "", "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile); code != 0 {
		b.Fatalf("publish: %s", errOut)
	}
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	provision := func() *exec.Cmd {
		c := exec.Command(oa, "provision", "--envelope", f.Repository+":"+fleet.EnvelopeTag("h01"))
		c.Env = append(os.Environ(), "OA_HOME="+h.Home)
		return c
	}
	runOne(b, provision())
	b.Run("oa-provision", func(b *testing.B) {
		var requests int64
		start := time.Now()
		for b.Loop() {
			f.Registry.ResetCounters()
			runOne(b, provision())
			requests += f.Registry.Requests()
		}
		b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/run")
	})
	b.Run("oras-pull", func(b *testing.B) {
		env := interoptest.Env(b)
		var requests int64
		start := time.Now()
		for b.Loop() {
			c := exec.Command(oras, "pull", "--plain-http", "-o", filepath.Join(b.TempDir(), "out"), f.Release)
			c.Env = env
			f.Registry.ResetCounters()
			runOne(b, c)
			requests += f.Registry.Requests()
		}
		b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/run")
	})
}
