package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestDownstreamTextNeverReachesTheAgent: a downstream server that puts
// planted text into its results, its tool errors and its stderr. Runs
// through the coordinator's MCP face (in-memory transports, a real
// subprocess downstream) never show any of it to the client.
func TestDownstreamTextNeverReachesTheAgent(t *testing.T) {
	const (
		inResult = "PLANTED-RESULT-7f3a9"
		inError  = "PLANTED-ERROR-2c8e1"
		inStderr = "PLANTED-STDERR-5d0b4"
	)
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[{"id":"n1","text":"` + inResult + `"}],"comment":"` + inResult + `"}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"error":"` + inError + `","detail":"` + inError + `"}`), IsError: true},
	})
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools, "--stderr-text", inStderr}, Confinement: connectortest.Allow(filepath.Dir(tools))})
	h.Bind(host, "claude-test")
	var operator strings.Builder
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	go mcpserve.Serve(ctx, c, serverSide)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "leak-test", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var seen []string
	call := func(name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		b, _ := json.Marshal(res)
		seen = append(seen, string(b), fmt.Sprint(err))
	}
	for i, record := range []string{"AB-1234", "CD-5678"} {
		call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "request_id": fmt.Sprintf("plant-%d", i),
			"inputs": map[string]any{"record_ref": record, "urgency": "soon", "summary": "A note."}})
	}
	call(contract.ToolListWorkflows, map[string]any{})
	call(contract.ToolListNeedsAttention, map[string]any{})
	if len(seen) < 8 {
		t.Fatalf("only %d answers", len(seen))
	}
	for _, s := range seen {
		for _, bad := range []string{inResult, inError, inStderr, h.Home, filepath.Dir(h.Home), os.TempDir() + "/"} {
			if strings.Contains(s, bad) {
				t.Fatalf("the client saw %q in:\n%s", bad, s)
			}
		}
	}
	if !strings.Contains(strings.Join(seen, "\n"), `"outcome":"not_sure_if_saved"`) {
		t.Fatalf("the runs did not end as the planted answers imply:\n%s", strings.Join(seen, "\n"))
	}
}
