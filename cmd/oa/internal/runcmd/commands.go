// Package runcmd holds oa's commands for running a worker (operators and
// the people who decide on paused runs): coordinator, attention,
// console and quickstart. Each parses its flags, calls the library (coordinator,
// demo) and prints.
package runcmd

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// Group is the group's heading in oa --help and its top-level commands,
// in the order oa --help lists them.
func Group() cli.CommandGroup {
	return cli.CommandGroup{
		ID:       "run",
		Title:    "Run it (operators and the people who decide on paused runs):",
		Commands: []*cobra.Command{newCoordinatorCmd(), newAttentionCmd(), newConsoleCmd(), newQuickstartCmd()},
	}
}
