package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/ir"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the oa version and the worker protocol it speaks",
		Args:  WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := oaVersion()
			if WantJSON(cmd) {
				return PrintJSON(cmd.OutOrStdout(), map[string]string{"version": v, "protocol": ir.Protocol})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "oa %s (protocol %s)\n", v, ir.Protocol)
			return nil
		},
	}
}

// oaVersion is the module version oa was built at, or "(devel)".
func oaVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
