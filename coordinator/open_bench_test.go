package coordinator_test

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
)

// BenchmarkOpen: the in-process part of a session start on a quickstart
// host (demo.Prepare): coordinator.Open, the MCP server and the
// initialize handshake over in-memory transports, then Close. Package
// initialization and process start are not in it (see
// cmd/oa BenchmarkSessionStart).
func BenchmarkOpen(b *testing.B) {
	home := b.TempDir()
	ctx := context.Background()
	if _, err := demo.Prepare(ctx, home, io.Discard); err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeDeployment})
		if err != nil {
			b.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := coordinator.NewServer(c).Connect(ctx, st, nil)
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
