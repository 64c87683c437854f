package mcpserve_test

import (
	"context"
	"testing"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestToolSchemasResolve: the MCP server resolves its tools' schemas on
// first use, so this proves at test time what NewServer used to check at
// every start: every schema it lists — the coordinator's own tools and
// each read-only capability's — resolves.
func TestToolSchemasResolve(t *testing.T) {
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(host, "claude-test")
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := mcpserve.ResolveToolSchemas(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(contract.CoordinatorTools) + len(c.ReadTools()); n != want || len(c.ReadTools()) == 0 {
		t.Fatalf("%d tools resolved, want %d (with a read tool)", n, want)
	}
}
