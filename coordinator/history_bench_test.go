package coordinator_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/testkit/coordtest"
)

// BenchmarkHistory measures what grows with a host's history: a session
// start (coordinator.Open; then the background count of receipts and
// runs every attempt waits for), a run and a read-only call, and `oa
// receipts verify`, incremental and full, on a quickstart host given OA_HISTORY_RUNS finished runs with
// their receipts (coordtest.BuildHistory, in bulk). It is skipped
// unless OA_HISTORY_RUNS is set; OA_HISTORY_DIR keeps the built host
// between runs (it takes minutes for a million). scripts/history-bench.sh
// runs it; the figures are in docs/PERFORMANCE.md.
func BenchmarkHistory(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("OA_HISTORY_RUNS"))
	if n <= 0 {
		b.Skip("set OA_HISTORY_RUNS (and OA_HISTORY_DIR to keep the host) to run")
	}
	ctx := context.Background()
	dir := os.Getenv("OA_HISTORY_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	home := filepath.Join(dir, "home-"+strconv.Itoa(n))
	built := filepath.Join(dir, "built-"+strconv.Itoa(n))
	if _, err := os.Stat(built); err != nil {
		os.RemoveAll(home)
		if _, err := demo.Prepare(ctx, home, io.Discard); err != nil {
			b.Fatal(err)
		}
		if err := coordtest.BuildHistory(ctx, home, demo.Deployment, n); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(built, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	opts := coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeDeployment, NoProbe: true}
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			c, err := coordinator.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("start-counted", func(b *testing.B) {
		for b.Loop() {
			c, err := coordinator.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.WaitCounted(ctx); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	// A run on the long history: what it costs must not grow with it.
	b.Run("run", func(b *testing.B) {
		c := openCounted(ctx, b, home)
		stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
		i := 0
		for b.Loop() {
			i++
			// The sandbox back to its seed, so the record read does not
			// grow with the notes this benchmark appends.
			b.StopTimer()
			if err := os.Remove(filepath.Join(sandbox.Dir(home), "records.json")); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs("AB-1234"), RequestID: "history-" + stamp + "-" + strconv.Itoa(i), Wait: time.Minute})
			if err != nil {
				b.Fatalf("run %d: %v", i, err)
			}
			if res.Proof != contract.ProofSealed {
				b.Fatalf("run %d: proof %s (%s/%s), want %s", i, res.Proof, res.Outcome, res.Reason, contract.ProofSealed)
			}
		}
	})
	// A read-only call on the long history: its checks (the plan check
	// from memory, the store check) must not grow with it either.
	b.Run("read", func(b *testing.B) {
		c := openCounted(ctx, b, home)
		tools := c.ReadTools()
		if len(tools) == 0 {
			b.Fatal("the deployment serves no read-only tool")
		}
		for b.Loop() {
			res, err := c.Read(ctx, tools[0].Capability, json.RawMessage(`{"record":"AB-1234"}`))
			if err != nil {
				b.Fatalf("read: %v", err)
			}
			if res.Outcome != contract.OutcomeDone {
				b.Fatalf("read: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDone)
			}
		}
	})
	verify := func(b *testing.B, full bool) {
		h, err := host.Open(ctx, home)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		r, err := ledger.Open(h).VerifyReceiptsWith(ctx, ledger.VerifyOptions{Full: full})
		if err != nil {
			b.Fatalf("verify receipts: %v", err)
		}
		if !r.OK {
			b.Fatalf("the receipts do not verify: %+v", r)
		}
	}
	b.Run("verify-full", func(b *testing.B) {
		peak := watchHeap()
		for b.Loop() {
			verify(b, true)
		}
		b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
	})
	b.Run("verify-incremental-100-new", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if err := coordtest.BuildHistory(ctx, home, demo.Deployment, 100); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			verify(b, false)
		}
	})
}

// watchHeap samples the live heap (bytes in heap objects) every
// millisecond until the function it returns is called, which returns the
// largest sample: the peak a verify holds, which grows with history when
// something keeps every row.
func watchHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// openCounted opens the history host's sandbox coordinator for a
// benchmark and waits for its background count, which its first attempt
// would otherwise wait for inside the timed loop.
func openCounted(ctx context.Context, b *testing.B, home string) *coordinator.Coordinator {
	b.Helper()
	c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeSandbox, Operator: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.WaitCounted(ctx); err != nil {
		b.Fatal(err)
	}
	return c
}
