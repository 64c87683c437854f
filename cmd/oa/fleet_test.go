package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/testkit/fleettest"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// oaProc runs the built oa with OA_HOME=home (none when empty) and the
// fleet key's password, and returns stdout, stderr and the exit status.
func oaProc(t testing.TB, home string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(oaBinary(t), args...)
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+fleettest.KeyPassword)
	if home != "" {
		cmd.Env = append(cmd.Env, "OA_HOME="+home)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

type procResult struct {
	out, errOut string
	code        int
}

// inParallel runs one oa process per host at once.
func inParallel(t *testing.T, hosts []*fleettest.Host, args func(h *fleettest.Host) []string) map[string]procResult {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]procResult{}
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, e, c := oaProc(t, h.Home, args(h)...)
			mu.Lock()
			out[h.ID] = procResult{o, e, c}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func fleetStatus(t *testing.T, specFile string) map[string]fleet.HostStatus {
	t.Helper()
	out, errOut, code := oaProc(t, "", "fleet", "status", "--fleet", specFile, "--json")
	if code != 0 {
		t.Fatalf("fleet status: %d %s", code, errOut)
	}
	var doc struct {
		Hosts []fleet.HostStatus `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	m := map[string]fleet.HostStatus{}
	for _, h := range doc.Hosts {
		m[h.Host] = h
	}
	return m
}

// TestFleetTwentyHostsAsProcesses provisions 20 hosts, each its own oa
// process with its own $OA_HOME, in parallel from one loopback registry:
// 18 bind under fleet pre-approval, one whose policy refuses pre-approval
// waits for a person (and is bound by one), one with another connection
// revision reports its own plan digest; then a published revocation
// reaches every host within one sync.
func TestFleetTwentyHostsAsProcesses(t *testing.T) {
	f := fleettest.New(t)
	var hosts []*fleettest.Host
	var ids []string
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("h%02d", i)
		opts := fleettest.HostOptions{PreApprove: true}
		switch id {
		case "h19":
			opts.PreApprove = false
		case "h20":
			opts.ConnectionRevisions = 2
		}
		hosts = append(hosts, f.NewHost(id, opts))
		ids = append(ids, id)
	}
	specFile := f.WriteSpec(f.Spec(f.Release, ids, ""))
	out, errOut, code := oaProc(t, "", "fleet", "check", specFile)
	wantExit(t, "fleet check", code, 0, out, errOut)
	wantHas(t, "fleet check", out, "20 hosts")
	out, errOut, code = oaProc(t, "", "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile)
	wantExit(t, "fleet publish", code, 0, out, errOut)
	wantHas(t, "fleet publish", out, "20 envelopes written")
	out, errOut, code = oaProc(t, "", "fleet", "publish", "--fleet", specFile, "--key", f.KeyFile)
	wantExit(t, "fleet publish again", code, 0, out, errOut)
	wantHas(t, "fleet publish again", out, "0 envelopes written, 20 unchanged")

	env := func(h *fleettest.Host) string { return f.Repository + ":" + fleet.EnvelopeTag(h.ID) }
	start := time.Now()
	res := inParallel(t, hosts, func(h *fleettest.Host) []string { return []string{"provision", "--envelope", env(h), "--json"} })
	t.Logf("20 hosts provisioned in parallel in %s", time.Since(start).Round(time.Millisecond))
	var localRef string
	for id, r := range res {
		var got fleet.Result
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("%s: %d %s %s", id, r.code, r.out, r.errOut)
		}
		switch id {
		case "h19":
			wantExit(t, "h19", r.code, 2, r.out, r.errOut)
			if got.Status.State != fleet.AwaitingApproval {
				t.Fatalf("h19: state = %q, want %q", got.Status.State, fleet.AwaitingApproval)
			}
			wantHas(t, "h19", r.errOut, "awaiting_approval")
			localRef = got.LocalRef
		default:
			wantExit(t, id, r.code, 0, r.out, r.errOut)
			if got.Status.State != fleet.Bound {
				t.Errorf("%s: state = %q, want %q", id, got.Status.State, fleet.Bound)
			}
			if !got.Bound {
				t.Errorf("%s: bound = false, want true", id)
			}
			if !got.Admitted {
				t.Errorf("%s: admitted = false, want true", id)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	st := fleetStatus(t, specFile)
	for _, h := range hosts {
		s := st[h.ID]
		// This fleet file pins no host keys: every status is only
		// self-signed, which anyone who can push could have written, so
		// each is flagged for the operator.
		if s.Status == nil {
			t.Fatalf("%s has no status: %+v", h.ID, s)
		}
		if s.Signed != fleet.SignedSelf {
			t.Fatalf("%s status signed = %q, want %q", h.ID, s.Signed, fleet.SignedSelf)
		}
		if !s.Flagged() {
			t.Fatalf("%s status is not flagged for the operator: %+v", h.ID, s)
		}
		if h.ID == "h19" {
			continue
		}
		b := currentBinding(t, h)
		if s.Status.PlanDigest != b.PlanDigest {
			t.Fatalf("%s reports plan %s, its binding is %s", h.ID, s.Status.PlanDigest, b.PlanDigest)
		}
		wantRev := int64(1)
		if h.ID == "h20" {
			wantRev = 2
		}
		if b.Connections[0].Revision != wantRev {
			t.Fatalf("%s bound connection revision %d, want %d", h.ID, b.Connections[0].Revision, wantRev)
		}
	}

	// A person on h19 approves; the next sync reports it bound.
	h19 := hosts[18]
	if _, errOut, code := oaProc(t, h19.Home, "admit", localRef, "--as", "Host Operator"); code != 0 {
		t.Fatalf("admit on h19: %d %s", code, errOut)
	}
	if _, errOut, code := oaProc(t, h19.Home, "bind", localRef, "--deployment", "clinic", "--model", "demo-model", "--as", "Host Operator", "--yes"); code != 0 {
		t.Fatalf("bind on h19: %d %s", code, errOut)
	}
	out, errOut, code = oaProc(t, h19.Home, "agent", "sync", "--once", "--envelope", env(h19))
	wantExit(t, "sync on h19", code, 0, out, errOut)
	wantHas(t, "sync on h19", out, "bound")

	// One long-running agent, to see the revocation arrive by itself.
	agent := exec.Command(oaBinary(t), "agent", "sync", "--interval", "1s", "--envelope", env(hosts[0]))
	agent.Env = append(os.Environ(), "OA_HOME="+hosts[0].Home)
	var agentOut strings.Builder
	agent.Stdout = &agentOut
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = agent.Process.Kill(); _ = agent.Wait() }()

	digest := f.Desc.Digest.String()
	out, errOut, code = oaProc(t, "", "revoke", digest, "--publish", "--fleet", specFile, "--fleet-key", f.KeyFile, "--reason", "test recall", "--as", "Auditor")
	wantExit(t, "revoke --publish", code, 0, out, errOut)
	wantHas(t, "revoke --publish", out, "published")
	res = inParallel(t, hosts[1:], func(h *fleettest.Host) []string {
		return []string{"agent", "sync", "--once", "--envelope", env(h), "--json"}
	})
	for id, r := range res {
		var got fleet.Result
		what := id + " after revocation"
		wantJSON(t, what, r.out, &got)
		wantExit(t, what, r.code, 2, r.out, r.errOut)
		if got.Status.State != fleet.Revoked {
			t.Fatalf("%s: state = %q, want %q", what, got.Status.State, fleet.Revoked)
		}
		wantHas(t, what, r.errOut, "release_revoked")
	}
	deadline := time.Now().Add(30 * time.Second)
	for fleetStatus(t, specFile)["h01"].Status.State != fleet.Revoked {
		if time.Now().After(deadline) {
			t.Fatalf("the running agent did not report the revocation:\n%s", agentOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id, s := range fleetStatus(t, specFile) {
		if s.Status.State != fleet.Revoked {
			t.Fatalf("%s: %+v", id, s.Status)
		}
	}
	// Revoked on the host itself: the coordinator's plan check refuses it.
	h, err := host.Open(context.Background(), hosts[5].Home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := admit.StatusOf(context.Background(), h, digest, time.Now())
	if err != nil {
		t.Fatalf("local status: %v", err)
	}
	if s.State != admit.Revoked {
		t.Fatalf("local status = %q, want %q", s.State, admit.Revoked)
	}
}

func currentBinding(t *testing.T, fh *fleettest.Host) *bind.Binding {
	t.Helper()
	h, err := host.Open(context.Background(), fh.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b, err := bind.Current(context.Background(), h, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFleetRefusalsChangeNothing: bad command lines and inputs are
// located refusals (exit 2) and write nothing to the registry.
func TestFleetRefusalsChangeNothing(t *testing.T) {
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	bad := f.WriteSpec(strings.Replace(f.Spec(f.Release, []string{"h01"}, ""), `model: "demo-model"`, `model: ""`, 1))
	before := f.Registry.Requests()
	_, errOut, code := oaProc(t, "", "fleet", "publish", "--fleet", bad, "--key", f.KeyFile)
	wantExit(t, "bad fleet", code, 2, "", errOut)
	wantHas(t, "bad fleet", errOut, "fleet_invalid", "fleet.cue:")
	if f.Registry.Requests() != before {
		t.Fatal("a refused publish reached the registry")
	}
	for _, args := range [][]string{
		{"provision", "--envelope", "no-registry-here"},
		{"provision", "--envelope", f.Repository + ":host-h01"}, // nothing published
		{"agent", "sync", "--envelope", f.Repository + ":host-h01", "--interval", "10ms"},
		{"revoke", "sha256:nothex", "--publish", "--fleet", bad, "--fleet-key", f.KeyFile, "--reason", "r", "--as", "A"},
		{"fleet", "status", "--fleet", bad},
		{"fleet", "check", bad},
	} {
		if _, errOut, code := oaProc(t, h.Home, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}

// TestFleetRefusedEnvelopeWritesNothing: a host given a tag with no
// envelope refuses and pushes no status.
func TestFleetRefusedEnvelopeWritesNothing(t *testing.T) {
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	_, errOut, code := oaProc(t, h.Home, "provision", "--envelope", f.Repository+":host-h01")
	wantExit(t, "oa provision", code, 2, "", errOut)
	wantHas(t, "oa provision", errOut, "fleet_envelope_missing")
	spec, err := fleet.LoadSpec(f.WriteSpec(f.Spec(f.Release, []string{"h01"}, "")))
	if err != nil {
		t.Fatal(err)
	}
	st, err := fleet.ReadStatuses(context.Background(), spec, time.Now(), time.Hour, fleet.Options{})
	if err != nil {
		t.Fatalf("read statuses: %v", err)
	}
	if st[0].Signed != fleet.NoStatus {
		t.Fatalf("status signed = %q, want %q: %+v", st[0].Signed, fleet.NoStatus, st)
	}
}

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

// TestRevokeFleetFlagsNeedPublish: fleet flags without --publish are a
// usage error, and nothing is revoked on the host.
func TestRevokeFleetFlagsNeedPublish(t *testing.T) {
	f := fleettest.New(t)
	h := f.NewHost("h01", fleettest.HostOptions{PreApprove: true})
	specFile := f.WriteSpec(f.Spec(f.Release, []string{"h01"}, ""))
	digest := f.Desc.Digest.String()
	_, errOut, code := oaProc(t, h.Home, "revoke", digest, "--fleet", specFile, "--fleet-key", f.KeyFile, "--reason", "r", "--as", "A")
	wantExit(t, "oa revoke", code, 2, "", errOut)
	wantHas(t, "oa revoke", errOut, "--publish")
	opened, err := host.Open(context.Background(), h.Home)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	revoked, err := admit.HasRevocation(context.Background(), opened, digest)
	if err != nil {
		t.Fatalf("has revocation: %v", err)
	}
	if revoked {
		t.Fatal("revoked locally: a refused revoke wrote a revocation")
	}
}
