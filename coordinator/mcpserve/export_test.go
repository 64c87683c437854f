package mcpserve

import (
	"fmt"

	"github.com/oa-dev/oa/coordinator"
)

// ResolveToolSchemas resolves the input and output schema of every tool
// the MCP server of c lists (they are otherwise resolved on first use),
// returning the first that does not resolve.
func ResolveToolSchemas(c *coordinator.Coordinator) (int, error) {
	s := &mcpServer{c: c, schemas: map[string]toolSchemas{}}
	defs := s.tools()
	for _, d := range defs {
		ts := s.schemas[d.tool.Name]
		for _, l := range []*lazySchema{ts.inRes, ts.outRes} {
			if _, err := l.resolved(); err != nil {
				return 0, fmt.Errorf("tool %s: %w", d.tool.Name, err)
			}
		}
	}
	return len(defs), nil
}
