package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/ir"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the oa version, its VCS revision and the worker protocol it speaks (also oa --version)",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := cli.Build()
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), struct {
					cli.BuildVersion
					Protocol string `json:"protocol"`
				}{b, ir.Protocol})
			}
			fmt.Fprintln(cmd.OutOrStdout(), b.String(ir.Protocol))
			return nil
		},
	}
}

// setVersionFlag gives the root --version, as cobra offers it, printing
// what oa version prints. The flag is declared here so that cobra adds
// no -v shorthand of its own.
func setVersionFlag(root *cobra.Command) {
	root.Version = cli.Build().String(ir.Protocol)
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the oa version (as oa version does)")
}
