package coordinator

import (
	"context"
	"time"

	"github.com/oa-dev/oa/resolve"
)

// CheckPlan exposes the plan re-check (bind.Check through the session's
// bind.Checker) to the tests and benchmarks.
func (c *Coordinator) CheckPlan(ctx context.Context) (*resolve.Plan, error) {
	return c.checkPlan(ctx)
}

// SetQuestionTTL sets how long an app's question waits for a person, for
// one test.
func SetQuestionTTL(d time.Duration) (restore func()) {
	old := questionTTL
	questionTTL = d
	return func() { questionTTL = old }
}
