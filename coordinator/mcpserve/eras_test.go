package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestOneEraEveryRound (issue 39): a 2025-06-18 client whose run pauses
// for a person more than once in one call (a read and a change that both
// need approval) is asked every time with elicitation/create and gets a
// result with an outcome — never a 2026-07-28 input-required result it
// cannot read; the call that started the run is not replayed, the same
// request asked again is.
func TestOneEraEveryRound(t *testing.T) {
	two := strings.Replace(servetest.ApprovalRegistry(), `description: "Read one record with its status and notes."`, "description: \"Read one record with its status and notes.\"\n\t\tapproval: \"required\"", 1)
	if two == servetest.ApprovalRegistry() {
		t.Fatal("starter registry changed: cannot mark records.read approval required")
	}
	t.Run("one pause", func(t *testing.T) { oneEra(t, servetest.ApprovalRegistry(), 1, "approve") })
	t.Run("two pauses", func(t *testing.T) { oneEra(t, two, 2, "approve") })
	t.Run("declined", func(t *testing.T) { oneEra(t, servetest.ApprovalRegistry(), 1, "") })
}

// oneEra runs one request that pauses at least pauses times, the person
// answering decision ("": declining the form).
func oneEra(t *testing.T, reg string, pauses int, decision string) {
	h := hosttest.New(t, nil)
	h.WriteRegistry(reg)
	hh := h.Open()
	h.AddConnection(hh, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(hh, "claude-test")
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &servetest.Buffer{}, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	go mcpserve.Serve(ctx, c, st)
	var mu sync.Mutex
	asked := 0
	// A client of 2025-06-18 knows no input-required result: the go-sdk
	// client's own rounds are off, so such a result would show.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "old-client", Version: "v1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			if decision == "" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
		}}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Fatalf("protocol %q", v)
	}
	run := func() map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
			"workflow": "append_triage_note", "request_id": "two-pauses", "wait_seconds": 60, "inputs": triage("AB-1234", "Two pauses.")}})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		if res.InputRequests != nil || res.RequestState != "" || strings.Contains(string(raw), "inputRequests") || res.IsError {
			t.Fatalf("a 2025-06-18 client got %s", raw)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("no result: %s", raw)
		}
		return out
	}
	outcome := "done"
	if decision == "" {
		outcome = "needs_review" // the form declined: the run waits
	}
	first := run()
	if first["outcome"] != outcome || first["replayed"] != false || asked < pauses {
		t.Fatalf("the call that paused %d times answered %v", asked, first)
	}
	if decision == "" {
		return
	}
	n := asked
	again := run()
	if again["outcome"] != "done" || again["replayed"] != true || asked != n {
		t.Fatalf("the same request again answered %v (asked %d more)", again, asked-n)
	}
}
