package hostcmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/harness"
)

func newConnectionImportCmd() *cobra.Command {
	var client, dir, scope string
	cmd := &cobra.Command{
		Use:   "import --client CLIENT [--dir DIR] [--scope local|project] [--json]",
		Short: "Propose one connection per MCP server an MCP client is already configured with",
		Long: `Import reads the MCP servers in the client's own configuration file (where
oa harness install writes; a project-level client's under --dir, default
the current folder) and proposes one connection each: its name, a connector
id (npm.PACKAGE for npx, pypi.PACKAGE for uvx, local.NAME otherwise), the
command and arguments, the NAMES of its environment variables (never their
values, which oa does not read into anything it keeps), a remote's URL and
header names, and a confinement profile (--read of the folders the command
needs, --write of the folders its arguments name, --preinstall for npx).
It prints the oa connection add-stdio (or add-remote) line of each for the operator to review,
change and run; it records nothing. An argument that looks like a secret is
left out and named.

For claude-code both of Claude Code's scopes are read, the local one first
(your ~/.claude.json, projects[DIR].mcpServers, where claude mcp add
writes by default) and then the project's .mcp.json; a server of the same
name in both is proposed once, from the local scope, which Claude Code
uses. --scope reads one only.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := clientDir(client, dir)
			if err != nil {
				return err
			}
			scopes := []string{""}
			if client == harness.ClientClaudeCode {
				scopes = []string{harness.ScopeLocal, harness.ScopeProject}
			}
			if scope != "" {
				s, err := clientScope(client, scope)
				if err != nil {
					return err
				}
				scopes = []string{s}
			}
			var files []string
			proposals := []connection.Proposal{}
			seen := map[string]bool{}
			for _, s := range scopes {
				m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: cli.Home(), Client: client, Dir: d, Scope: s})
				if err != nil {
					return err
				}
				file, servers, err := m.Servers()
				if err != nil {
					return err
				}
				files = append(files, file)
				for _, srv := range servers {
					if !seen[srv.Name] {
						seen[srv.Name] = true
						proposals = append(proposals, connection.Propose(srv))
					}
				}
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"client": client, "file": files[0], "files": files, "proposals": proposals})
			}
			printProposals(cmd, fmt.Sprintf("%s (%s)", client, strings.Join(files, ", ")), proposals)
			return nil
		},
	}
	cmd.Flags().StringVar(&client, "client", "", "the MCP client whose configuration to read: "+strings.Join(harness.Clients[:len(harness.Clients)-1], ", "))
	cmd.Flags().StringVar(&dir, "dir", "", "the project folder of a project-level client (default: the current folder)")
	cmd.Flags().StringVar(&scope, "scope", "", "claude-code only: read only its local scope (~/.claude.json) or only the project's .mcp.json (default: both)")
	_ = cmd.MarkFlagRequired("client")
	return cmd
}

// printProposals prints each proposed connection's add line and notes.
func printProposals(cmd *cobra.Command, from string, proposals []connection.Proposal) {
	w := cmd.OutOrStdout()
	if len(proposals) == 0 {
		fmt.Fprintf(w, "no MCP servers in %s\n", from)
		return
	}
	fmt.Fprintf(w, "%d MCP servers in %s; review each line, then run it (nothing was recorded):\n", len(proposals), from)
	for _, p := range proposals {
		fmt.Fprintf(w, "\n# %s\n%s\n", p.Name, p.Add)
		for _, n := range p.Notes {
			fmt.Fprintf(w, "#   note: %s\n", n)
		}
	}
}

// applyServerJSON fills opts from the server.json at file, when one is
// given: a stdio package's command, arguments and variable names (stdio
// is then true: opts is complete), or a remote's URL into remote, for
// remote.apply to finish. A required header the command line does not
// give is refused, naming it.
func applyServerJSON(cmd *cobra.Command, file string, opts *connection.AddOptions, remote *remoteFlags, args, secretFiles []string) (stdio bool, err error) {
	if file == "" {
		return false, nil
	}
	if cmd.ArgsLenAtDash() >= 0 || len(args) > 1 {
		return false, cli.Usage(fmt.Errorf("--from-server-json gives the server: give NAME only, no -- COMMAND"))
	}
	f, err := os.Open(file)
	if err != nil {
		return false, blocking.New(blocking.ServerJSONInvalid, "the server.json cannot be read").At(file, "")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, connection.MaxServerJSON+1))
	if err != nil {
		return false, blocking.New(blocking.ServerJSONInvalid, "the server.json cannot be read").At(file, "")
	}
	s, required, err := connection.FromServerJSON(b)
	if err != nil {
		if l := blocking.Refusals(err); len(l) == 1 {
			return false, l[0].At(file, "")
		}
		return false, err
	}
	if s.URL != "" {
		if remote.url == "" {
			remote.url = s.URL
		}
		for _, h := range required {
			if !slices.Contains(remote.headers, h) {
				return false, blocking.New(blocking.ServerJSONInvalid, "the server requires header %s: give --header %s --secret-file F", h, h).At(file, "remotes")
			}
		}
		return false, nil
	}
	if remote.url != "" {
		return false, cli.Usage(fmt.Errorf("the server.json describes a stdio package: give no --url"))
	}
	if len(secretFiles) > 1 {
		return false, cli.Usage(fmt.Errorf("a stdio server takes one --secret-file of NAME=VALUE lines"))
	}
	opts.Config.Command, opts.Config.Args = s.Command, s.Args
	for _, name := range s.Env {
		if _, set := opts.Config.Settings[name]; !set && !slices.Contains(opts.Config.Env, name) {
			opts.Config.Env = append(opts.Config.Env, name)
		}
	}
	if len(secretFiles) == 1 {
		opts.Config.SecretFile = secretFiles[0]
	}
	return true, nil
}
