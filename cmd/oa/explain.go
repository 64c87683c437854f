package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

func newExplainCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "explain [CODE]",
		Short: "Explain a blocking code: its stage, meaning and how to resolve it",
		Args:  cli.WantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var entries []blocking.Entry
			switch {
			case all || len(args) == 0:
				entries = blocking.All()
			default:
				e, ok := blocking.Lookup(blocking.Code(args[0]))
				if !ok {
					return cli.Usage(fmt.Errorf("unknown blocking code %q; `oa explain --all` lists them", args[0]))
				}
				entries = []blocking.Entry{e}
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), entries)
			}
			for _, e := range entries {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  (stage %s)\n  %s.\n  %s\n", e.Code, e.Stage, e.Title, e.Copy)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list every blocking code")
	return cmd
}
