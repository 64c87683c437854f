package coordinator

import (
	"context"
	"net"
	"time"

	"github.com/oa-dev/oa/resolve"
)

// CheckPlan exposes the plan re-check (bind.Check through the session's
// bind.Checker) to the tests and benchmarks.
func (c *Coordinator) CheckPlan(ctx context.Context) (*resolve.Plan, error) {
	return c.bound.checkPlan(ctx)
}

// SetQuestionTTL sets how long an app's question waits for a person, for
// one test.
func SetQuestionTTL(d time.Duration) (restore func()) {
	old := questionTTL
	questionTTL = d
	return func() { questionTTL = old }
}

// SkipQuestionPeerCheck lets every peer of a question socket on to the
// MAC check, for one test: the MAC alone must refuse a server.
func SkipQuestionPeerCheck() (restore func()) {
	old := questionPeer
	questionPeer = func(net.Conn) string { return "" }
	return func() { questionPeer = old }
}

// SetRelistAge sets how old a tool list a step may be checked against
// (readRelist), for one test.
func SetRelistAge(d time.Duration) (restore func()) {
	old := readRelist
	readRelist = d
	return func() { readRelist = old }
}

// HoldIntake holds every new run's intake on c back by d: its first
// steps reach its first write before it is decided. Call it before c
// runs anything.
func (c *Coordinator) HoldIntake(d time.Duration) {
	c.engine.holdIntake = func() { time.Sleep(d) }
}

// WaitCounted waits until the background count of the session start is
// done and returns what it found.
func (c *Coordinator) WaitCounted(ctx context.Context) error { return c.guard.waitCounted(ctx) }
