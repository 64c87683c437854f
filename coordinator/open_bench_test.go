package coordinator_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// BenchmarkOpen: the in-process part of a session start on a quickstart
// host (demo.Prepare): coordinator.Open, the MCP server and the
// initialize handshake over in-memory transports, then Close. Package
// initialization and process start are not in it (see
// cmd/oa BenchmarkSessionStart). The host has served once before.
func BenchmarkOpen(b *testing.B) {
	home := b.TempDir()
	ctx := context.Background()
	if _, err := demo.Prepare(ctx, home, io.Discard); err != nil {
		b.Fatal(err)
	}
	// One start first, as on a host that has served before: the receipt
	// key is then kept sealed and no start decrypts it again.
	warm, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeDeployment})
	if err != nil {
		b.Fatal(err)
	}
	warm.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeDeployment})
		if err != nil {
			b.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := mcpserve.NewServer(c).Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := client.Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs.Close()
		ss.Wait()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstRunPerProcess: what a new coordinator process pays for
// its first run on a host that has sealed before: coordinator.Open (a
// new host.Host, so nothing decrypted yet), one append_triage_note run
// to done and sealed, Close. Sealing a receipt signs a head checkpoint;
// when the host key signs it, this first seal decrypts the host key
// (scrypt).
func BenchmarkFirstRunPerProcess(b *testing.B) {
	d := newBenchDeployment(b, hosttest.Sandbox)
	ctx := context.Background()
	in := inputs("AB-1234")
	if res, err := d.c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: "warm", Wait: time.Minute}); err != nil {
		b.Fatalf("warm run: %v", err)
	} else if res.Outcome != contract.OutcomeDone {
		b.Fatalf("warm run: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDone)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		c, err := coordinator.Open(ctx, coordinator.Options{Home: d.Home, Deployment: "clinic", EffectTimeout: 30 * time.Second, Operator: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: fmt.Sprintf("first-%d", i), Wait: time.Minute})
		if err != nil {
			b.Fatalf("run %d: %v", i, err)
		}
		if res.Outcome != contract.OutcomeDone {
			b.Fatalf("run %d: outcome %s (reason %s), want %s", i, res.Outcome, res.Reason, contract.OutcomeDone)
		}
		if res.ReceiptDigest == "" {
			b.Fatalf("run %d: no receipt digest", i)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
