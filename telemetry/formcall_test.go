package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/telemetry"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestFormShowsTheChangeOnlyToThePerson: the approval form the person
// answers at the client shows the exact call the step would send — the
// record and the note's words — for a client of each protocol era (input
// requests, and elicitation/create); none of it is in a tool result the
// agent gets, in exported telemetry or in the operator's log.
func TestFormShowsTheChangeOnlyToThePerson(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	h := hosttest.New(t, nil)
	h.WriteRegistry(servetest.ApprovalRegistry())
	hh := h.Open()
	h.AddConnection(hh, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(hh, "claude-test")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: "test"})
	if err != nil || tel == nil {
		t.Fatalf("setup: %v", err)
	}
	operator := &servetest.Buffer{}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var forms, seen []string
	for i, era := range []struct {
		name     string
		protocol string
	}{{"input requests", ""}, {"elicitation/create", "2025-06-18"}} {
		st, ct := mcp.NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- mcpserve.Serve(ctx, c, st) }()
		client := mcp.NewClient(&mcp.Implementation{Name: "form-test", Version: "v1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				forms = append(forms, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": contract.DecisionApprove}}, nil
			},
		})
		var sopts *mcp.ClientSessionOptions
		if era.protocol != "" {
			sopts = &mcp.ClientSessionOptions{ProtocolVersion: era.protocol}
		}
		cs, err := client.Connect(ctx, ct, sopts)
		if err != nil {
			t.Fatal(err)
		}
		record := []string{plantedRecord, "CD-5678"}[i]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "request_id": "form-" + record, "wait_seconds": 30,
			"inputs": map[string]any{"record_ref": record, "urgency": "routine", "summary": plantedInput + " " + plantedSecret}}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", era.name, err, res)
		}
		b, _ := json.Marshal(res)
		seen = append(seen, string(b))
		if out, _ := res.StructuredContent.(map[string]any); out["outcome"] != string(contract.OutcomeDone) {
			t.Fatalf("%s: approved in the form: %s", era.name, b)
		}
		for _, tool := range []string{contract.ToolListNeedsAttention} {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r)
			seen = append(seen, string(b))
		}
		mu.Lock()
		if len(forms) != i+1 || !strings.Contains(forms[i], "connection sandbox, tool append_note") || !strings.Contains(forms[i], `"record": "`+record+`"`) || !strings.Contains(forms[i], plantedInput) {
			t.Fatalf("%s: the form does not show the call:\n%s", era.name, strings.Join(forms, "\n---\n"))
		}
		mu.Unlock()
		cs.Close()
		<-served
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	exported := bytes.Join(rcv.raw, nil)
	if len(exported) == 0 {
		t.Fatal("nothing was exported")
	}
	agent := strings.Join(seen, "\n")
	for _, leak := range []string{plantedInput, "Kx93", plantedSecret, "[triage:", "exactly as they will be sent", "append_note\""} {
		if bytes.Contains(exported, []byte(leak)) {
			t.Errorf("exported telemetry carries %q", leak)
		}
		if strings.Contains(agent, leak) {
			t.Errorf("a tool result carries %q:\n%s", leak, agent)
		}
		if strings.Contains(operator.String(), leak) {
			t.Errorf("the operator's log carries %q:\n%s", leak, operator.String())
		}
	}
}
