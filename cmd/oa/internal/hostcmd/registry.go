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
	return reg
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
