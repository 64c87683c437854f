package coordinator_test

import (
	"testing"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/resolve"
)

// TestToolSchemasResolve: the MCP server resolves its tools' schemas on
// first use, so this proves at test time what NewServer used to check at
// every start: every schema it lists — the coordinator's own tools and
// each read-only capability's — resolves.
func TestToolSchemasResolve(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	n, err := coordinator.ResolveToolSchemas(s.c)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(contract.CoordinatorTools) + len(s.c.ReadTools()); n != want || len(s.c.ReadTools()) == 0 {
		t.Fatalf("%d tools resolved, want %d (with a read tool)", n, want)
	}
}
