package coordinator_test

import (
	"testing"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestMain removes the oa binary the subprocess tests (load, confinement)
// share.
func TestMain(m *testing.M) { servetest.Main(m) }

// Shorthands of the serve test kit.
var (
	want   = servetest.Want
	triage = servetest.Triage
)

// wantResult fails the test now unless res ended with outcome and reason,
// naming the one that differs: the steps after a run depend on how it
// ended.
func wantResult(t testing.TB, what string, res *coordinator.Result, outcome contract.Outcome, reason contract.Reason) {
	t.Helper()
	if res.Outcome != outcome {
		t.Fatalf("%s: outcome %s (reason %s), want %s", what, res.Outcome, res.Reason, outcome)
	}
	if res.Reason != reason {
		t.Fatalf("%s: reason %s, want %s", what, res.Reason, reason)
	}
}
