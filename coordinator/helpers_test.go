package coordinator_test

import (
	"testing"

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
