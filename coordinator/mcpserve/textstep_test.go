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

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// textAnswerBundle declares the clinic job's read and check answer text:
// the guard reads steps.load_record.text or .json, the check's predicate
// result.json.
func textAnswerBundle(dir string) {
	p := filepath.Join(dir, "jobs.cue")
	b, err := os.ReadFile(p)
	if err != nil {
		panic(err)
	}
	s := strings.NewReplacer(
		`capability: "records.read", args: "record_lookup"},`, `capability: "records.read", args: "record_lookup", answer: "text"},`,
		`evidence: "note_saved"}`, `evidence: "note_saved", answer: "text"}`,
		`expr: "steps.load_record.status == \"open\""`, `expr: "steps.load_record.text == \"open\" || (*steps.load_record.json.status | \"\") == \"open\""`,
		`for n in result.notes if`, `for n in result.json.notes if`,
	).Replace(string(b))
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		panic(err)
	}
}

// TestWorkflowUsesTextAnswer (issue 39): a workflow step declared answer
// text sees the text of a tool that answers in text only as
// steps.X.text, and as steps.X.json when it parses as JSON: the guard and
// the check decide on it (done when the text says so, guard_failed when
// it does not), where a text answer used to leave the step no result.
func TestWorkflowUsesTextAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want contract.Reason
	}{
		{"json", `{"status": "open", "notes": [{"text": "[triage:soon] A note."}]}`, contract.ReasonVerified},
		{"plain text", "closed", contract.ReasonGuardFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.New(t, textAnswerBundle)
			h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
			host := h.Open()
			content, _ := json.Marshal([]map[string]any{{"type": "text", "text": tc.text}})
			tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
				{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Content: content},
				{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
			})
			h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: connectortest.Allow(filepath.Dir(tools))})
			h.Bind(host, "claude-test")
			c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &strings.Builder{}, EffectTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, ct := mcp.NewInMemoryTransports()
			go mcpserve.Serve(ctx, c, st)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "text-step", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			run, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "request_id": "text-step-1",
				"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "soon", "summary": "A note."}}})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(run.StructuredContent)
			var out struct {
				Reason contract.Reason `json:"reason"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || out.Reason != tc.want {
				t.Fatalf("run answered %.600s, want reason %s", raw, tc.want)
			}
		})
	}
}
