package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/oa-dev/oa/resolve"
)

// CheckPlan exposes the plan re-check (bind.Check through the session's
// bind.Checker) to the tests and benchmarks.
func (c *Coordinator) CheckPlan(ctx context.Context) (*resolve.Plan, error) {
	return c.checkPlan(ctx)
}

// ResolveToolSchemas resolves the input and output schema of every tool
// the MCP server of c lists (they are otherwise resolved on first use),
// returning the first that does not resolve.
func ResolveToolSchemas(c *Coordinator) (int, error) {
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

// SetQuestionTTL sets how long an app's question waits for a person, for
// one test.
func SetQuestionTTL(d time.Duration) (restore func()) {
	old := questionTTL
	questionTTL = d
	return func() { questionTTL = old }
}

// WaitCounted waits until the background count of the session start is
// done and returns what it found.
func (c *Coordinator) WaitCounted(ctx context.Context) error { return c.waitCounted(ctx) }
