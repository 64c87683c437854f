package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/telemetry"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestProposedChangeStaysWithTheOperator: a run paused for approval keeps
// the change it proposes — the note it would write, planted text in it —
// for the host's operator (`oa attention show` opens it), sealed at rest:
// not one file of the host holds the text in clear, and nothing of it
// reaches exported telemetry, what the calling agent sees (the run's
// result, the items it may list and get, which carry today's fixed copy
// only), or the operator's log, through the pause, the approval and the
// resumed run.
func TestProposedChangeStaysWithTheOperator(t *testing.T) {
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
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approval-test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res)
		seen = append(seen, string(b))
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	run := func() map[string]any {
		return call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "request_id": "approve-1",
			"inputs": map[string]any{"record_ref": plantedRecord, "urgency": "routine", "summary": plantedInput + " " + plantedSecret}})
	}
	paused := run()
	id, _ := paused["attention_id"].(string)
	if paused["reason"] != string(contract.ReasonApprovalRequired) || id == "" {
		t.Fatalf("want a paused run: %v", paused)
	}
	call(contract.ToolListNeedsAttention, map[string]any{})
	call(contract.ToolGetAttentionItem, map[string]any{"attention_id": id})

	// The operator sees the change...
	shown, err := coordinator.AttentionRecords(hh).Show(ctx, id)
	if err != nil || shown.Proposed == nil || !strings.Contains(string(shown.Proposed.Call.Arguments), plantedInput) {
		t.Fatalf("the operator does not see the proposed change: %+v, %v", shown, err)
	}
	// ...which no file of the host holds in clear (the sandbox has written
	// nothing yet).
	err = filepath.WalkDir(h.Home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, leak := range []string{plantedInput, plantedSecret} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("%s holds %q in clear", path, leak)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := coordinator.DecideAttention(ctx, hh, attention.Decision{AttentionID: id, Decision: contract.DecisionApprove, By: "Dr Ada", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if done := run(); done["outcome"] != string(contract.OutcomeDone) {
		t.Fatalf("resumed: %v", done)
	}
	call(contract.ToolGetAttentionItem, map[string]any{"attention_id": id})
	cs.Close()
	<-served
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
	for _, leak := range []string{plantedInput, "Kx93", plantedSecret, "[triage:", "proposed", "call_digest", shown.CallDigest, "sandbox"} {
		if bytes.Contains(exported, []byte(leak)) {
			t.Errorf("exported telemetry carries %q", leak)
		}
		if strings.Contains(agent, leak) {
			t.Errorf("the agent saw %q:\n%s", leak, agent)
		}
		if strings.Contains(operator.String(), leak) && leak != "sandbox" {
			t.Errorf("the operator's log carries %q:\n%s", leak, operator.String())
		}
	}
}
