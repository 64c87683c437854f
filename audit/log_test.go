package audit

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestAuditChecksTheLogCheckpoint: the bundle carries the host's log
// checkpoint and log key; verify holds the checkpoint's root to the
// bundle's receipts and reports how many of the policy's witnesses
// cosigned it (none here: the policy names none); a checkpoint of
// another host's log, or one whose root is not these receipts', breaks
// the log link.
func TestAuditChecksTheLogCheckpoint(t *testing.T) {
	f := newFixture(t)
	r := verify(t, f.bundle, f.keys)
	if !r.OK || r.Log == nil || r.Log.Size != 4 || len(r.Log.Cosigners) != 0 || r.Log.Origin != "oa/"+hosttest.Name {
		t.Fatalf("log report: %+v %+v", r.Log, r.Links)
	}
	for _, l := range r.Links {
		if l.Name == LinkLog && !strings.Contains(l.Detail, "checkpoint of size 4 = the first 4 receipts, no witnesses in the policy") {
			t.Fatalf("log link detail %q", l.Detail)
		}
	}
	other := newFixture(t)
	swapped := rewrite(t, f.bundle, func(docs map[string][]byte) {
		docs[DocLogCheckpoint] = openWhole(t, other.bundle).docs[DocLogCheckpoint]
	})
	wantBroken(t, verify(t, swapped, f.keys), LinkLog, blocking.LogCheckpointUnverified)
}
