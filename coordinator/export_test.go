package coordinator

import (
	"context"

	"github.com/oa-dev/oa/resolve"
)

// CheckPlan exposes the plan re-check (bind.Check through the session's
// bind.Checker) to the tests and benchmarks.
func (c *Coordinator) CheckPlan(ctx context.Context) (*resolve.Plan, error) {
	return c.checkPlan(ctx)
}
