package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/harness"
)

// sandboxCase is one scripted case of the sandbox records connector.
type sandboxCase struct {
	Record  string          `json:"record"`
	Case    string          `json:"case"`
	Want    harness.Outcome `json:"want"`
	Outcome harness.Outcome `json:"outcome"`
	Reason  string          `json:"reason"`
}

// sandboxCases are the cases quickstart drives, one per outcome and more.
var sandboxCases = []sandboxCase{
	{Record: "AB-1234", Case: "normal", Want: harness.OutcomeDone},
	{Record: "DU-0001", Case: "duplicate record", Want: harness.OutcomeNeedsReview},
	{Record: "FS-0001", Case: "false \"saved\" answer", Want: harness.OutcomeNotSureIfSaved},
	{Record: "TO-0001", Case: "timeout after save", Want: harness.OutcomeNotSureIfSaved},
	{Record: "OF-0001", Case: "app offline", Want: harness.OutcomeDidNotRun},
	{Record: "CL-0001", Case: "record closed (guard)", Want: harness.OutcomeDidNotRun},
}

func newQuickstartCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart [DIR]",
		Short: "Run the whole pipeline on embedded defaults, then drive every sandbox case through a real MCP session",
		Long: `Quickstart makes a host in DIR (default: a new temporary folder), with
nothing to install or start: it compiles the clinic example, pushes it to
the OCI layout, signs it as a publisher, attests it as an independent
authority, admits it, signs a starter capability registry, verifies the
built-in sandbox connection, resolves and binds the plan. Then it starts
` + "`oa coordinator serve`" + ` as a subprocess, connects to it as an MCP client
and runs the workflow through every sandbox case, printing the integrity
chain, each outcome and the receipt chain. Exit 1 if any case does not
give its expected outcome.`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := quickstartDir(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			progress := out
			if wantJSON(cmd) {
				progress = io.Discard
			}
			fmt.Fprintf(progress, "quickstart host in %s\n", dir)
			setup, err := demo.Prepare(cmd.Context(), dir, progress)
			if err != nil {
				return err
			}
			if err := printDemoChain(cmd, progress, setup); err != nil {
				return err
			}
			cases, err := driveSandbox(cmd, progress, dir)
			if err != nil {
				return err
			}
			report, err := verifyDemoReceipts(cmd, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "receipt chain: %d receipts, intact=%v, head %s\n", report.Receipts, report.OK, report.Head)
			if wantJSON(cmd) {
				if err := printJSON(out, map[string]any{"home": dir, "reference": setup.Release.Ref, "planDigest": setup.Binding.PlanDigest, "cases": cases, "receipts": report}); err != nil {
					return err
				}
			}
			for _, c := range cases {
				if c.Outcome != c.Want {
					return fmt.Errorf("case %s gave %s, want %s", c.Case, c.Outcome, c.Want)
				}
			}
			if !report.OK {
				return fmt.Errorf("the receipt chain is broken at #%d", report.FirstBroken)
			}
			return nil
		},
	}
}

func quickstartDir(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	return os.MkdirTemp("", "oa-quickstart-")
}

func printDemoChain(cmd *cobra.Command, out io.Writer, setup *demo.Setup) error {
	h, err := admit.OpenHost(cmd.Context(), setup.Home)
	if err != nil {
		return err
	}
	defer h.Close()
	in, err := h.Integrity(cmd.Context(), setup.Release.Target, setup.Release.Desc, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "integrity chain:")
	printIntegrity(out, setup.Release.Ref, in)
	return in.Err()
}

// driveSandbox serves the demo deployment from a subprocess `oa
// coordinator serve` and runs every sandbox case through an MCP client.
func driveSandbox(cmd *cobra.Command, out io.Writer, home string) ([]sandboxCase, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	server := exec.Command(exe, "coordinator", "serve", "--deployment", demo.Deployment, "--effect-timeout", "3s")
	server.Env = append(os.Environ(), "OA_HOME="+home)
	server.Stderr = cmd.ErrOrStderr()
	client := mcp.NewClient(&mcp.Implementation{Name: "oa-quickstart", Version: oaVersion()}, nil)
	session, err := client.Connect(cmd.Context(), &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting oa coordinator serve: %w", err)
	}
	defer session.Close()
	tools, err := session.ListTools(cmd.Context(), nil)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "MCP session: %d tools:", len(tools.Tools))
	for _, t := range tools.Tools {
		fmt.Fprintf(out, " %s", t.Name)
	}
	fmt.Fprintln(out)
	cases := append([]sandboxCase{}, sandboxCases...)
	for i := range cases {
		c := &cases[i]
		res, err := session.CallTool(cmd.Context(), &mcp.CallToolParams{Name: harness.ToolRunWorkflow, Arguments: map[string]any{
			harness.ArgWorkflow:    "append_triage_note",
			harness.ArgRequestID:   fmt.Sprintf("quickstart-%d", i+1),
			harness.ArgWaitSeconds: 60,
			harness.ArgInputs:      map[string]any{"record_ref": c.Record, "urgency": "routine", "summary": "Quickstart check-in note."},
		}})
		if err != nil {
			return nil, err
		}
		var r coordinator.Result
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil || res.IsError {
			return nil, fmt.Errorf("case %s: the tool answered an error", c.Case)
		}
		c.Outcome, c.Reason = r.Outcome, string(r.Reason)
		mark := "✓"
		if c.Outcome != c.Want {
			mark = "✗"
		}
		fmt.Fprintf(out, "  %s %-24s %-8s → %-17s (%s)\n", mark, c.Case, c.Record, c.Outcome, c.Reason)
	}
	return cases, nil
}

func verifyDemoReceipts(cmd *cobra.Command, home string) (*coordinator.ChainReport, error) {
	h, err := admit.OpenHost(cmd.Context(), home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return coordinator.VerifyReceipts(cmd.Context(), h)
}
