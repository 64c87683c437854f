package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/demo"
)

// Serve a coordinator to an MCP client over the go-sdk's in-memory
// transports: here the built-in demo deployment on the sandbox connector
// (what `oa coordinator serve` serves without --deployment), listed and
// run once from a go-sdk client. In production the transport is
// NewStdioTransport over the process's stdin and stdout.
func ExampleServe() {
	ctx := context.Background()
	home, err := os.MkdirTemp("", "oa-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	if _, err := demo.Ensure(ctx, home, io.Discard); err != nil {
		log.Fatal(err)
	}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment, Mode: coordinator.ModeSandbox})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	serverSide, clientSide := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, c, serverSide) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools.Tools {
		fmt.Println(tool.Name)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
		"workflow":   "append_triage_note",
		"request_id": "example-1",
		"inputs":     map[string]any{"record_ref": "AB-1234", "urgency": "routine", "summary": "Cough, three days."},
	}})
	if err != nil {
		log.Fatal(err)
	}
	var result coordinator.Result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &result); err != nil {
		log.Fatal(err)
	}
	fmt.Println(result.Outcome, result.Reason, result.Proof)

	cs.Close()
	<-served
	// Output:
	// decide_attention_item
	// get_attention_item
	// get_run
	// list_needs_attention
	// list_workflows
	// records_read
	// run_workflow
	// done verified sealed
}
