package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
)

// Case is one scripted case of the sandbox records connector: the record
// that triggers it, the outcome it must give and, once driven, the
// outcome and reason it gave.
type Case struct {
	Record  string           `json:"record"`
	Case    string           `json:"case"`
	Want    contract.Outcome `json:"want"`
	Outcome contract.Outcome `json:"outcome"`
	Reason  string           `json:"reason"`
}

// Cases are the sandbox cases the demo drives, one per outcome and more.
var Cases = []Case{
	{Record: "AB-1234", Case: "normal", Want: contract.OutcomeDone},
	{Record: "DU-0001", Case: "duplicate record", Want: contract.OutcomeNeedsReview},
	{Record: "FS-0001", Case: "false \"saved\" answer", Want: contract.OutcomeNotSureIfSaved},
	{Record: "TO-0001", Case: "timeout after save", Want: contract.OutcomeNotSureIfSaved},
	{Record: "OF-0001", Case: "app offline", Want: contract.OutcomeDidNotRun},
	{Record: "CL-0001", Case: "record closed (guard)", Want: contract.OutcomeDidNotRun},
}

// Driver reports what DriveSandbox sees as it goes; either func may be nil.
type Driver struct {
	// ClientVersion is the MCP client's version in the initialize request.
	ClientVersion string
	// Tools is called once with the served tool names.
	Tools func(names []string)
	// Answered is called after each case with its result.
	Answered func(c Case)
}

// DriveSandbox starts server (an `oa coordinator serve` of the demo
// deployment), connects to it as an MCP client over its stdio, as an agent
// would, and runs the workflow once for every case in Cases. It returns
// the cases with what each gave; a case answered with a tool error is a
// fault, a wrong outcome is for the caller to judge.
func DriveSandbox(ctx context.Context, server *exec.Cmd, d Driver) ([]Case, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "oa-quickstart", Version: d.ClientVersion}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting oa coordinator serve: %w", err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	if d.Tools != nil {
		names := make([]string, len(tools.Tools))
		for i, t := range tools.Tools {
			names[i] = t.Name
		}
		d.Tools(names)
	}
	cases := append([]Case{}, Cases...)
	for i := range cases {
		if err := runCase(ctx, session, i, &cases[i]); err != nil {
			return nil, err
		}
		if d.Answered != nil {
			d.Answered(cases[i])
		}
	}
	return cases, nil
}

// runCase runs the workflow for c through session and records what it gave.
func runCase(ctx context.Context, session *mcp.ClientSession, i int, c *Case) error {
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
		contract.ArgWorkflow:    "append_triage_note",
		contract.ArgRequestID:   fmt.Sprintf("quickstart-%d", i+1),
		contract.ArgWaitSeconds: 60,
		contract.ArgInputs:      map[string]any{"record_ref": c.Record, "urgency": "routine", "summary": "Quickstart check-in note."},
	}})
	if err != nil {
		return err
	}
	var r coordinator.Result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || res.IsError {
		return fmt.Errorf("case %s: the tool answered an error", c.Case)
	}
	c.Outcome, c.Reason = r.Outcome, string(r.Reason)
	return nil
}
