package hostcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
)

func newRegistryCmd() *cobra.Command {
	reg := &cobra.Command{Use: "registry", Short: "Write, check and sign this host's capability registry"}
	reg.AddCommand(&cobra.Command{
		Use:   "init",
		Short: "Write a starter capability registry ($OA_HOME/registry.cue) for the built-in sandbox",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := host.LoadPolicy(filepath.Join(cli.Home(), host.PolicyFile))
			if err != nil {
				return err
			}
			path, err := resolve.InitRegistry(cli.Home(), p.Host)
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"registry": path})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry written to %s; review it, then `oa registry sign --as NAME`\n", path)
			return nil
		},
	})
	reg.AddCommand(&cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a capability registry (default $OA_HOME/registry.cue) with located errors",
		Args:  cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := noRegistryYet(args); err != nil {
				return err
			}
			r, err := resolve.LoadRegistry(registryPath(args))
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"host": r.Host, "registryDigest": r.Digest(), "capabilities": len(r.Capabilities), "connectors": len(r.Connectors), "tools": len(r.Tools)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry ok: host %s, %d capabilities, %d connectors, %d tools, digest %s\n", r.Host, len(r.Capabilities), len(r.Connectors), len(r.Tools), r.Digest())
			return nil
		},
	})
	var as string
	sign := &cobra.Command{
		Use:   "sign [FILE] --as NAME",
		Short: "Sign the capability registry with the host key (FILE is installed as $OA_HOME/registry.cue first)",
		Long: `Sign records, signed with the host key, that the named person reviewed the
capability registry with its exact digest. Plans resolve only against a
registry whose digest is the last one signed. With FILE, the file is checked
and installed as $OA_HOME/registry.cue before it is signed.`,
		Args: cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := noRegistryYet(args); err != nil {
				return err
			}
			h, err := host.Open(ctx, cli.Home())
			if err != nil {
				return err
			}
			defer h.Close()
			_, sig, err := resolve.SignRegistryFile(ctx, h, registryPath(args), as, time.Now())
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), sig)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry %s signed as #%d by %s\n", sig.RegistryDigest, sig.Seq, sig.SignedBy)
			return nil
		},
	}
	sign.Flags().StringVar(&as, "as", "", "the person who reviewed the registry (recorded)")
	reg.AddCommand(sign)
	reg.AddCommand(newRegistryImportCmd())
	return reg
}

func newRegistryImportCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "import CONNECTION [--file FILE]",
		Short: "Add a disabled registry entry for each tool of a verified connection the registry does not list yet",
		Long: `Import reads the connection's verified tool list and adds to the registry
file (default $OA_HOME/registry.cue) one entry for each tool the registry
does not list yet for the connection's connector: disabled, with the risk
its annotations give (readOnlyHint: read_only, otherwise consequential,
destructiveHint noted in a comment) and a suggested capability key. A
connector the registry lacks is added, disabled. Nothing is enabled, no
existing entry is changed (each is named as kept), and the rest of the
file stays as written. Map each entry to a capability, enable those a
package uses, then oa registry sign --as NAME.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path := file
			if path == "" {
				if err := noRegistryYet(nil); err != nil {
					return err
				}
				path = registryPath(nil)
			}
			h, err := host.Open(ctx, cli.Home())
			if err != nil {
				return err
			}
			defer h.Close()
			imp, err := resolve.ImportConnection(ctx, h, path, args[0])
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), imp)
			}
			w := cmd.OutOrStdout()
			for _, t := range imp.Added {
				note := ""
				if t.Destructive {
					note = ", destructiveHint"
				}
				fmt.Fprintf(w, "  added  %s  %s%s  capability %s  (disabled)\n", t.Name, t.Risk, note, t.Capability)
			}
			for _, name := range imp.Kept {
				fmt.Fprintf(w, "  kept   %s  (already listed for connector %s; unchanged)\n", name, imp.Connector)
			}
			if imp.ConnectorAdded {
				fmt.Fprintf(w, "  added  connector %s  (disabled)\n", imp.Connector)
			}
			if !imp.Written {
				fmt.Fprintf(w, "nothing to add: the registry lists every tool of connection %s\n", imp.Connection)
				return nil
			}
			fmt.Fprintf(w, "%d entries added to %s, disabled: map each to a capability, enable those a package uses, then `oa registry sign --as NAME`\n", len(imp.Added), path)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the registry file to add to (default $OA_HOME/registry.cue)")
	return cmd
}

// noRegistryYet refuses, pointing at `oa registry init`, when no FILE is
// given and the host has no registry yet (a fresh host).
func noRegistryYet(args []string) error {
	if len(args) == 1 {
		return nil
	}
	if _, err := os.Stat(registryPath(nil)); errors.Is(err, fs.ErrNotExist) {
		return blocking.New(blocking.RegistryUnreadable, "this host has no capability registry yet: run `oa registry init` to write a starter one at $OA_HOME/%s, review it, then `oa registry sign --as NAME`", resolve.RegistryFile)
	}
	return nil
}

func registryPath(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return filepath.Join(cli.Home(), resolve.RegistryFile)
}
