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
		Short: "Print the oa version and the worker protocol it speaks",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := cli.Version()
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]string{"version": v, "protocol": ir.Protocol})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "oa %s (protocol %s)\n", v, ir.Protocol)
			return nil
		},
	}
}
