package mcpserve_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// checkOnlyJob is a job of the clinic bundle that makes no change: it
// reads the record back and checks it is open.
const checkOnlyJob = `package worker

jobs: check_record_open: {
	purpose:    "Check that a clinic record is open."
	done_means: "The record was read and is open."
	inputs: record_ref: {
		type:        "string"
		description: "The clinic record reference."
		pattern:     "^[A-Z]{2}-[0-9]{4}$"
	}
	steps: [
		{id: "confirm_open", kind: "check", capability: "records.read", args: "record_lookup", predicate: "result_open", evidence: "is_open"},
	]
	evidence: ["is_open"]
}

evaluators: result_open: {
	kind: "predicate"
	expr: "result.status == \"open\""
}
`

// TestWordsOfNoChange (issue 39): a workflow with no effect step that
// ends done says nothing was changed (record_changed no, never "The
// change was made"); a read that did not run says to read again, never
// to retry with a request_id (reads take none).
func TestWordsOfNoChange(t *testing.T) {
	h := hosttest.New(t, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "check.cue"), []byte(checkOnlyJob), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	hh := h.Open()
	h.AddConnection(hh, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(hh, "claude-test")
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &strings.Builder{}, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	go mcpserve.Serve(ctx, c, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "words", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return out
	}
	res := call(contract.ToolRunWorkflow, map[string]any{"workflow": "check_record_open", "request_id": "check-1", "wait_seconds": 60, "inputs": map[string]any{"record_ref": "AB-1234"}})
	if res["outcome"] != "done" || res["record_changed"] != contract.ChangedNo || res["reason"] != string(contract.ReasonCheckedNoChange) || strings.Contains(res["what_happened"].(string), "change was made") {
		t.Fatalf("a workflow with no effect answered %v", res)
	}
	read := call("records_read", map[string]any{"record": "OF-0001"})
	if read["outcome"] != "did_not_run" || strings.Contains(read["next_action"].(string), "request_id") || strings.Contains(read["what_happened"].(string), "written") {
		t.Fatalf("a read that did not run answered %v", read)
	}
}
