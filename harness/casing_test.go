package harness_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/oa-dev/oa/harness"
)

// TestTurnRecordJSONIsCamelCase holds oa harness transcript --json to the
// casing of the rest of oa's --json output (runId, receiptDigest), not the
// run record's snake_case it is read from.
func TestTurnRecordJSONIsCamelCase(t *testing.T) {
	b, err := json.Marshal(harness.TurnRecord{Time: time.Unix(1, 0), UpdatedAt: time.Unix(2, 0), RunID: "run_1", RequestID: "r", WorkflowWithheld: true, ReceiptDigest: "sha256:00"})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"attempt", "outcome", "reason", "receiptDigest", "requestId", "runId", "time", "updatedAt", "workflow", "workflowWithheld"}
	if !slices.Equal(names, want) {
		t.Fatalf("TurnRecord's JSON names %v, want %v", names, want)
	}
}
