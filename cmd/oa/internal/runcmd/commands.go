// Package runcmd holds oa's commands for running a worker (operators and
// the people who decide on paused runs): coordinator, attention,
// console and quickstart. Each parses its flags, calls the library (coordinator,
// demo) and prints.
package runcmd

import "github.com/spf13/cobra"

// Commands are the group's top-level commands, in the order oa --help
// lists them.
func Commands() []*cobra.Command {
	return []*cobra.Command{newCoordinatorCmd(), newAttentionCmd(), newConsoleCmd(), newQuickstartCmd()}
}
