package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/harness"
)

func newHarnessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "harness",
		Short: "Install a bound deployment into an MCP client, inspect the installation, read its runs",
		Long: `The harness owns the agent session (the model loop); oa only installs a
bound deployment into it and reads back what happened. For an MCP client
(--client claude-code or generic) install writes the client's MCP server
entry for oa coordinator serve, the projection of the bound release with its
Agent Skills folder, and an install record; inspect compares them with the
binding; transcript lists the deployment's runs from this host's store.`,
	}
	cmd.AddCommand(newHarnessInstallCmd(), newHarnessInspectCmd(), newHarnessTranscriptCmd())
	return cmd
}

// harnessFlags are the flags of install and inspect.
type harnessFlags struct {
	client     string
	deployment string
	dir        string
}

func (f *harnessFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.client, "client", "", "the MCP client: "+strings.Join(harness.Clients, " or "))
	cmd.Flags().StringVar(&f.deployment, "deployment", "", "the bound deployment")
	cmd.Flags().StringVar(&f.dir, "dir", ".", "the folder to install into: the project folder for claude-code")
	_ = cmd.MarkFlagRequired("client")
	_ = cmd.MarkFlagRequired("deployment")
}

func (f *harnessFlags) open() (*harness.MCPClient, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return harness.NewMCPClient(harness.MCPClientOptions{Home: oaHome(), Client: f.client, Dir: f.dir, Executable: exe})
}

func newHarnessInstallCmd() *cobra.Command {
	var f harnessFlags
	cmd := &cobra.Command{
		Use:   "install --client claude-code|generic --deployment NAME [--dir DIR]",
		Short: "Install a bound deployment into an MCP client: server entry, skill folder, install record",
		Long: `Install writes what an MCP client needs to work with the deployment, once
its binding verifies and its release is actively admitted:

  claude-code  the oa-NAME server in DIR/.mcp.json (merged: every other
               server and setting is kept), the projection of the bound
               release in DIR/.claude/oa/NAME, its Agent Skills folder in
               DIR/.claude/skills/PACKAGE, and DIR/.claude/oa/NAME.install.json
  generic      DIR/oa-NAME.mcp.json (a standalone mcpServers file), the
               projection in DIR/oa-NAME (skills under skills/PACKAGE) and
               DIR/oa-NAME.install.json

The server entry runs this oa executable as coordinator serve --deployment
NAME with OA_HOME set to this host. A file oa did not write is never
replaced. Installing again replaces the installation whole.`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.open()
			if err != nil {
				return err
			}
			inst, err := m.Prepare(cmd.Context(), f.deployment)
			if err != nil {
				return err
			}
			if wantJSON(cmd) {
				if err := printJSON(cmd.OutOrStdout(), inst); err != nil {
					return err
				}
				return inst.Err()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed deployment %s into %s (%s)\n", inst.Deployment, inst.Client, inst.Dir)
			printInstallation(cmd.OutOrStdout(), inst)
			return inst.Err()
		},
	}
	f.register(cmd)
	return cmd
}

func newHarnessInspectCmd() *cobra.Command {
	var f harnessFlags
	cmd := &cobra.Command{
		Use:   "inspect --client claude-code|generic --deployment NAME [--dir DIR]",
		Short: "Report what of a deployment is installed in an MCP client and whether it matches the binding",
		Long: `Inspect reads the install record and checks, each by name: the binding
verifies (binding) and its release is actively admitted (admission), the
install record is there (record), the client's oa-NAME server entry runs
the installed oa as coordinator serve --deployment NAME with this OA_HOME
(server_entry), every installed file has its recorded digest with none
missing or added (files), the installed persona, skill and
materializationDigest are the bound plan's (projection), and the binding
sequence number and plan digest are the current binding's (binding_link).
Exit status 2 with each failed check's code when anything differs.`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.open()
			if err != nil {
				return err
			}
			inst, err := m.Inspect(cmd.Context(), f.deployment)
			if err != nil {
				return err
			}
			if wantJSON(cmd) {
				if err := printJSON(cmd.OutOrStdout(), inst); err != nil {
					return err
				}
				return inst.Err()
			}
			state := "matches the binding"
			if !inst.Matches {
				state = "does NOT match the binding"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deployment %s in %s (%s): %s\n", inst.Deployment, inst.Client, inst.Dir, state)
			printInstallation(cmd.OutOrStdout(), inst)
			return inst.Err()
		},
	}
	f.register(cmd)
	return cmd
}

func printInstallation(w io.Writer, inst *harness.Installation) {
	if r := inst.Record; r != nil {
		fmt.Fprintf(w, "  server       %s in %s: %s %s\n", r.Server.Name, r.Server.File, r.Server.Entry.Command, strings.Join(r.Server.Entry.Args, " "))
		if r.SkillDir != "" {
			fmt.Fprintf(w, "  skill        %s\n", r.SkillDir)
		}
		fmt.Fprintf(w, "  projection   %s\n", r.ProjectionDir)
		fmt.Fprintf(w, "  files        %d, each recorded with its digest\n", len(r.Files))
		fmt.Fprintf(w, "  record       %s\n", inst.RecordFile)
		fmt.Fprintf(w, "  installed    %s@%s, binding #%d, plan %s, model %s\n", r.Package, r.Version, r.BindingSeq, r.PlanDigest, r.Model)
		fmt.Fprintf(w, "  materialization %s\n", r.MaterializationDigest)
	}
	if b := inst.Bound; b != nil {
		fmt.Fprintf(w, "  bound        %s@%s, binding #%d, plan %s, model %s\n", b.Package, b.Version, b.BindingSeq, b.PlanDigest, b.Model)
	}
	for _, c := range inst.Checks {
		if c.OK {
			fmt.Fprintf(w, "  ok       %s\n", c.Name)
			continue
		}
		fmt.Fprintf(w, "  CHANGED  %s: %s [%s]\n", c.Name, c.Detail, c.Code)
	}
}

func newHarnessTranscriptCmd() *cobra.Command {
	var deployment string
	var limit int
	cmd := &cobra.Command{
		Use:   "transcript --deployment NAME [--limit N]",
		Short: "List a deployment's runs from this host's store: time, run, workflow, attempt, outcome, reason, receipt",
		Long: `Transcript lists the deployment's runs, oldest first (the latest --limit of
them; 0 lists all): when each started, its run id and request id, the
workflow, the attempt, the outcome and closed reason, and the receipt
digest of a sealed run. It shows names, codes and digests only: the store
keeps no input value and nothing read downstream, and a workflow name the
caller made up is withheld.`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageError{fmt.Errorf("--limit must be 0 or more")}
			}
			turns, err := harness.Transcript(cmd.Context(), oaHome(), deployment, limit)
			if err != nil {
				return err
			}
			if wantJSON(cmd) {
				return printJSON(cmd.OutOrStdout(), struct {
					Deployment string               `json:"deployment"`
					Runs       []harness.TurnRecord `json:"runs"`
				}{deployment, turns})
			}
			w := cmd.OutOrStdout()
			if len(turns) == 0 {
				fmt.Fprintf(w, "no runs for deployment %s\n", deployment)
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tRUN\tREQUEST\tWORKFLOW\tATTEMPT\tOUTCOME\tREASON\tRECEIPT")
			for _, t := range turns {
				workflow := t.Workflow
				if t.WorkflowWithheld {
					workflow = "(withheld)"
				}
				receipt := t.ReceiptDigest
				if receipt == "" {
					receipt = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.Time.Format(time.RFC3339), t.RunID, t.RequestID, workflow, t.Attempt, t.Outcome, t.Reason, receipt)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "the deployment")
	cmd.Flags().IntVar(&limit, "limit", 50, "list only the latest N runs (0 lists all)")
	_ = cmd.MarkFlagRequired("deployment")
	return cmd
}
