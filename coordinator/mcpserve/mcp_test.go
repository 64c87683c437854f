package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
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

// TestMCPInMemory serves a coordinator over the go-sdk's in-memory
// transports: a run answers through structuredContent, and protocol errors
// (an unknown tool) are fixed copy that does not quote the call.
func TestMCPInMemory(t *testing.T) {
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(host, "claude-test")
	var operator bytes.Buffer
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "in-memory", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
		"workflow": "append_triage_note", "request_id": "mem-1", "inputs": map[string]any{"record_ref": "AB-1234", "urgency": "routine", "summary": "In memory."}}})
	if err != nil || res.IsError {
		t.Fatalf("run_workflow: %v %+v", err, res)
	}
	var out coordinator.Result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.Outcome != contract.OutcomeDone || out.Proof != contract.ProofSealed {
		t.Fatalf("result: %v %s", err, b)
	}
	const secret = "sk_live_4Tq8Wm2Xz6Lp0Nc5Rv9B"
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_" + secret, Arguments: map[string]any{}})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("unknown tool: %v", err)
	}
	cs.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the client closed")
	}
	if strings.Contains(operator.String(), secret) {
		t.Fatalf("the operator channel quotes the call: %s", operator.String())
	}
}
