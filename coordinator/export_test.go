package coordinator

import (
	"context"

	"github.com/oa-dev/oa/resolve"
)

// CheckPlan exposes the plan re-check (admission status, LoadFor,
// Resolve, comparison with the binding) to the benchmarks.
func (c *Coordinator) CheckPlan(ctx context.Context) (*resolve.Plan, error) {
	return c.checkPlan(ctx)
}
