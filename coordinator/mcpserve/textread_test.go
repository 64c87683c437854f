package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
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

// TestTextReadForwarded (issue 39): a governed read of a tool that
// answers in text only (content blocks, no structuredContent, no output
// schema) forwards the server's blocks to the calling agent as
// server_content — over the bound, what fits and content_bound naming
// the bound — and the text reaches nothing else: not a run's result, not
// the operator's channel, not a file under $OA_HOME (records, receipts).
func TestTextReadForwarded(t *testing.T) {
	const planted = "PLANTED-TEXT-ANSWER-4e1d"
	long := planted + " " + strings.Repeat("ward B-4 is quiet. ", connector.MaxContentBytes/16)
	blocks, _ := json.Marshal([]map[string]any{
		{"type": "text", "text": long},
		{"type": "resource_link", "uri": "file:///never/shown", "name": "never"},
	})
	short, _ := json.Marshal([]map[string]any{{"type": "text", "text": planted + " Ada is in ward B-4."}, {"type": "resource_link", "uri": "file:///wards/b4", "name": "b4"}})
	for _, tc := range []struct {
		name    string
		content json.RawMessage
		cut     bool
	}{{"short", short, false}, {"over the bound", blocks, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.New(t, nil)
			h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
			host := h.Open()
			tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
				{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Content: tc.content},
				{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
			})
			h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: connectortest.Allow(filepath.Dir(tools))})
			h.Bind(host, "claude-test")
			var operator strings.Builder
			c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, ct := mcp.NewInMemoryTransports()
			go mcpserve.Serve(ctx, c, st)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "text-read", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("records_read: %v %+v", err, res)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			var out struct {
				Outcome       contract.Outcome  `json:"outcome"`
				Content       json.RawMessage   `json:"content"`
				ServerContent []json.RawMessage `json:"server_content"`
				ContentBound  string            `json:"content_bound"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || out.Outcome != contract.OutcomeDone || out.Content != nil {
				t.Fatalf("records_read answered %.400s", raw)
			}
			var text struct{ Type, Text string }
			if len(out.ServerContent) == 0 || json.Unmarshal(out.ServerContent[0], &text) != nil || text.Type != "text" || !strings.HasPrefix(text.Text, planted) {
				t.Fatalf("the agent did not get the server's text: %.400s", raw)
			}
			switch {
			case !tc.cut && (len(out.ServerContent) != 2 || out.ContentBound != "" || !strings.Contains(string(out.ServerContent[1]), "file:///wards/b4")):
				t.Fatalf("a short answer: %s", raw)
			case tc.cut && (len(out.ServerContent) != 1 || !strings.Contains(out.ContentBound, connector.ContentBound) || len(text.Text) > connector.MaxContentBytes || !strings.HasPrefix(long, text.Text)):
				t.Fatalf("an answer over the bound: %d blocks, bound %q, %d bytes of text", len(out.ServerContent), out.ContentBound, len(text.Text))
			}

			// A run reads the same tool: its result shows none of it.
			run, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "request_id": "text-1",
				"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "soon", "summary": "A note."}}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(run)
			if bytes.Contains(b, []byte(planted)) {
				t.Fatalf("a run's result carries the read's text: %s", b)
			}
			if strings.Contains(operator.String(), planted) {
				t.Fatalf("the operator's channel carries the read's text:\n%s", operator.String())
			}
			cs.Close()
			c.Close()
			_ = filepath.WalkDir(h.Home, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(planted)) {
					t.Errorf("%s holds the read's text", p)
				}
				return nil
			})
		})
	}
}
