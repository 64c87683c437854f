package hostcmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/harness"
)

func newHarnessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "harness",
		Short: "Install a bound deployment into an MCP client, inspect or uninstall it, read its runs",
		Long: `The harness owns the agent session (the model loop); oa only installs a
bound deployment into it and reads back what happened. For an MCP client
(--client ` + strings.Join(harness.Clients, ", ") + `) install writes the
client's MCP server entry for oa coordinator serve in the client's own
configuration file, the projection of the bound release with its Agent
Skills folder, and an install record; inspect compares them with the
binding; uninstall removes exactly what install wrote; transcript lists the
deployment's runs from this host's store; list shows every client on this
machine with its oa entries and whether each matches its binding.`,
	}
	cmd.AddCommand(newHarnessListCmd(), newHarnessInstallCmd(), newHarnessInspectCmd(), newHarnessUninstallCmd(), newHarnessTranscriptCmd())
	return cmd
}

// clientFiles is the help text naming what install writes for each client.
const clientFiles = `Each client gets its entry in its own file (project-level ones under DIR,
user-level ones under the user's home, from HOME and the client's own
variables):

  claude-code     ~/.claude.json, projects[DIR].mcpServers: Claude Code's local
                  scope, private to you and this machine (--scope local, the
                  default); or DIR/.mcp.json (mcpServers), the file teams commit,
                  with --scope project; skill in DIR/.claude/skills/PACKAGE;
                  projection and record in DIR/.claude/oa
  claude-desktop  claude_desktop_config.json (mcpServers) in ~/Library/Application
                  Support/Claude (macOS), %APPDATA%\Claude (Windows) or
                  $XDG_CONFIG_HOME/Claude, default ~/.config/Claude (Linux); no
                  skill folder: the skill is in the projection, oa/NAME/skills
  cursor          DIR/.cursor/mcp.json (mcpServers); skill in DIR/.cursor/skills
  vscode          DIR/.vscode/mcp.json (servers, "type": "stdio"; comments kept);
                  skill in DIR/.github/skills
  codex           $CODEX_HOME/config.toml (default ~/.codex) as a
                  [mcp_servers.oa-NAME] table; skill in ~/.agents/skills; with
                  --dir, DIR/.codex/config.toml and DIR/.agents/skills (an
                  install of the earlier ~/.codex/skills is read, and removed
                  by uninstall or moved by installing again)
  gemini-cli      DIR/.gemini/settings.json (mcpServers); skill in DIR/.gemini/skills
  windsurf        ~/.codeium/windsurf/mcp_config.json (mcpServers); skill in
                  ~/.codeium/windsurf/skills
  zed             DIR/.zed/settings.json (context_servers, flat command/args/env;
                  the 2025 "source": "custom" form is read too; comments kept); no skill folder: the skill is in the projection,
                  DIR/.zed/oa/NAME/skills
  generic         DIR/oa-NAME.mcp.json (a standalone mcpServers file), the
                  projection in DIR/oa-NAME (skills under skills/PACKAGE)

Every other server, setting and comment in the file is kept; a file that
does not parse is refused with its path and line and left as it is; each
file is replaced atomically.`

// harnessFlags are the flags of install and inspect.
type harnessFlags struct {
	client     string
	deployment string
	dir        string
	scope      string
	person     string
}

func (f *harnessFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.client, "client", "", "the MCP client: "+strings.Join(harness.Clients, ", "))
	cmd.Flags().StringVar(&f.deployment, "deployment", "", "the bound deployment")
	cmd.Flags().StringVar(&f.dir, "dir", "", "the project folder to install into (default: the current folder); not for a user-level client (claude-desktop, windsurf); codex installs per user without it, into the project with it")
	cmd.Flags().StringVar(&f.scope, "scope", "", "claude-code only: local (default: your ~/.claude.json, projects[DIR].mcpServers, private to you and this machine) or project (DIR/.mcp.json, which teams commit: it gets this machine's paths)")
	_ = cmd.MarkFlagRequired("client")
	_ = cmd.MarkFlagRequired("deployment")
}

func (f *harnessFlags) open() (*harness.MCPClient, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := clientDir(f.client, f.dir)
	if err != nil {
		return nil, err
	}
	scope, err := clientScope(f.client, f.scope)
	if err != nil {
		return nil, err
	}
	return harness.NewMCPClient(harness.MCPClientOptions{Home: cli.Home(), Client: f.client, Dir: dir, Scope: scope, Executable: exe, Person: f.person})
}

// clientDir is the folder to give harness.MCPClientOptions.Dir for
// client and the --dir given: the current folder for a project-level
// client by default, none for a user-level one, and --dir refused for a
// client that reads no project configuration.
func clientDir(client, dir string) (string, error) {
	switch {
	case harness.UserLevel(client) && !harness.ProjectLevel(client) && dir != "":
		return "", cli.Usage(fmt.Errorf("--dir is for project-level clients: %s keeps its configuration per user (under HOME)", client))
	case !harness.UserLevel(client) && dir == "":
		return ".", nil
	}
	return dir, nil
}

// clientScope is the --scope for client: Claude Code's local scope by
// default, as the entry holds this machine's paths; a scope other than
// local or project, or one for another client, is a usage error.
func clientScope(client, scope string) (string, error) {
	switch {
	case client != harness.ClientClaudeCode && scope != "":
		return "", cli.Usage(fmt.Errorf("--scope is for claude-code: %s has one place for its entry", client))
	case client != harness.ClientClaudeCode:
		return "", nil
	case scope == "":
		return harness.ScopeLocal, nil
	case scope != harness.ScopeLocal && scope != harness.ScopeProject:
		return "", cli.Usage(fmt.Errorf("--scope %q: give local or project", scope))
	}
	return scope, nil
}

func newHarnessListCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "list [--dir DIR] [--json]",
		Short: "List the MCP clients on this machine, their oa entries, and whether each matches its binding",
		Long: `List shows every MCP client oa installs into, in each place it reads its
configuration: a project-level client's file under --dir (default the
current folder), a user-level client's own, and both for Codex. A client
is installed when its configuration file or its executable (on PATH) is
found. Each oa-NAME entry of the file is inspected as oa harness inspect
does: it matches the binding, or differs (naming each failed check's
code: harness_not_installed for an entry with no install record), or its
state is unknown (the host cannot be read). A configuration file that
does not parse is shown with its refusal. List writes nothing and exits
0 whatever it finds.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = "."
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return cli.Usage(fmt.Errorf("--dir %s is not a folder", dir))
			}
			clients, err := harness.List(cmd.Context(), harness.ListOptions{Home: cli.Home(), Dir: dir})
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"clients": clients})
			}
			printClientList(cmd.OutOrStdout(), clients)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the project folder whose project-level clients to list (default: the current folder)")
	return cmd
}

// printClientList prints List's rows as a table, each oa entry with its
// state.
func printClientList(w io.Writer, clients []harness.ClientListing) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tSCOPE\tINSTALLED\tCONFIG\tOA ENTRIES")
	for _, c := range clients {
		installed := "no"
		switch {
		case c.ConfigFound:
			installed = "yes"
		case c.Binary != "":
			installed = "yes (" + c.Binary + ")"
		}
		config := c.ConfigFile
		if config == "" {
			config = "-"
		} else if !c.ConfigFound {
			config += " (none)"
		}
		var entries []string
		for _, e := range c.Entries {
			switch e.State {
			case harness.EntryDiffers:
				codes := make([]string, len(e.Codes))
				for i, code := range e.Codes {
					codes[i] = string(code)
				}
				entries = append(entries, fmt.Sprintf("%s differs (%s)", e.Name, strings.Join(codes, ", ")))
			case harness.EntryUnknown:
				entries = append(entries, fmt.Sprintf("%s unknown (%s)", e.Name, e.Detail))
			default:
				entries = append(entries, e.Name+" "+e.State)
			}
		}
		if c.Problem != nil {
			where := ""
			if c.Problem.Pos != "" {
				where = c.Problem.Pos + ": "
			}
			entries = append(entries, fmt.Sprintf("unreadable: %s%s [%s]", where, c.Problem.Detail, c.Problem.Code))
		}
		if len(entries) == 0 {
			entries = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Client, c.Scope, installed, config, strings.Join(entries, "; "))
	}
	_ = tw.Flush()
}

func newHarnessInstallCmd() *cobra.Command {
	var f harnessFlags
	cmd := &cobra.Command{
		Use:   "install --client CLIENT --deployment NAME [--dir DIR] [--scope local|project] [--person NAME]",
		Short: "Install a bound deployment into an MCP client: server entry, skill folder, install record",
		Long: `Install writes what an MCP client needs to work with the deployment, once
its binding verifies and its release is actively admitted: the oa-NAME
server entry, the projection of the bound release, its Agent Skills folder
where the client reads skills, and an install record.

` + clientFiles + `

The server entry runs this oa executable as coordinator serve --deployment
NAME with OA_HOME set to this host. A skill folder oa did not write is never
replaced. Installing again replaces the installation whole.

--person NAME installs for a person the host policy names, who answers the
approval forms at this client: the host makes an Ed25519 key for the
installation (once per client and deployment, 0600 under $OA_HOME/keys),
the entry adds --client CLIENT, and install prints the clients line to add
to the person in the host policy. Once it is there, an answer given at
the client is signed with that key for the person and shows as "NAME via
client CLIENT".`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The entry names this executable; go run's is deleted when it ends.
			if exe, _ := os.Executable(); cli.IsGoRunBuild(exe) {
				return cli.Usage(fmt.Errorf("this oa runs under go run, from a temporary file the client could not start later: install oa first (go install ./cmd/oa), then run the installed oa"))
			}
			m, err := f.open()
			if err != nil {
				return err
			}
			inst, err := m.Prepare(cmd.Context(), f.deployment)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSONResult(cmd.OutOrStdout(), inst)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed deployment %s into %s (%s)\n", inst.Deployment, inst.Client, inst.Dir)
			printInstallation(cmd.OutOrStdout(), inst)
			return inst.Err()
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.person, "person", "", "the person (as the host policy names them) who answers approval forms at this client")
	return cmd
}

func newHarnessInspectCmd() *cobra.Command {
	var f harnessFlags
	cmd := &cobra.Command{
		Use:   "inspect --client CLIENT --deployment NAME [--dir DIR] [--scope local|project]",
		Short: "Report what of a deployment is installed in an MCP client and whether it matches the binding",
		Long: `Inspect reads the install record and checks, each by name: the binding
verifies (binding) and its release is actively admitted (admission), the
install record is there (record), the client's oa-NAME server entry runs
the installed oa as coordinator serve --deployment NAME with this OA_HOME
(server_entry), the entry sets every variable the deployment's
connections take from oa's environment with --env NAME (settings:
connection_setting_missing names each one missing), every installed file
has its recorded digest with none missing or added (files), the installed persona, skill and
materializationDigest are the bound plan's (projection), and the binding
sequence number and plan digest are the current binding's (binding_link).
Exit status 2 with each failed check's code when anything differs.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.open()
			if err != nil {
				return err
			}
			inst, err := m.Inspect(cmd.Context(), f.deployment)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSONResult(cmd.OutOrStdout(), inst)
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
		} else {
			fmt.Fprintf(w, "  skill        %s/skills/%s (in the projection: %s reads no skill folder of its own)\n", r.ProjectionDir, r.Package, inst.Client)
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
	if d := inst.Decider; d != nil {
		if d.Named {
			fmt.Fprintf(w, "  decider      %s answers at this client, signed with the host's key %s for the installation (named in the host policy)\n", d.Person, d.Fingerprint)
		} else {
			fmt.Fprintf(w, "  decider      %s answers at this client once the host policy names the installation's key (%s): add to persons.%s in policy.cue\n                 %s\n               then admit and bind again (the policy digest changes) and install again; until then answers at the client are signed by no one\n", d.Person, d.Fingerprint, d.Person, d.PolicyLine)
		}
	}
	for _, c := range inst.Checks {
		if c.OK {
			fmt.Fprintf(w, "  ok       %s\n", c.Name)
			continue
		}
		fmt.Fprintf(w, "  CHANGED  %s: %s [%s]\n", c.Name, c.Detail, c.Code)
	}
}

func newHarnessUninstallCmd() *cobra.Command {
	var f harnessFlags
	cmd := &cobra.Command{
		Use:   "uninstall --client CLIENT --deployment NAME [--dir DIR] [--scope local|project]",
		Short: "Remove exactly what oa harness install wrote for a deployment",
		Long: `Uninstall removes what the install record lists, as long as it is still as
install wrote it: the oa-NAME server entry (and the configuration file or
its servers key, when install created them and nothing else is left in
them), the projection and skill files, the folders install created, and
last the install record. Every other server, setting and comment stays.

Anything changed since install (an edited entry, an altered file, a file
added beside them) is left in place and named, with the install record;
exit status 2 (harness_uninstall_incomplete). A configuration file that does
not parse is refused and nothing is removed. The host is not consulted:
a deployment can be uninstalled after it was unbound.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := f.open()
			if err != nil {
				return err
			}
			r, err := m.Uninstall(cmd.Context(), f.deployment)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSONResult(cmd.OutOrStdout(), r)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "uninstalled deployment %s from %s (%s)\n", r.Deployment, r.Client, r.Dir)
			for _, p := range r.Removed {
				fmt.Fprintf(w, "  removed  %s\n", p)
			}
			for _, p := range r.Left {
				fmt.Fprintf(w, "  LEFT     %s\n", p)
			}
			return r.Err()
		},
	}
	f.register(cmd)
	return cmd
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
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return cli.Usage(fmt.Errorf("--limit must be 0 or more"))
			}
			turns, err := harness.Transcript(cmd.Context(), cli.Home(), deployment, limit)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), struct {
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
