// Package fleetcmd holds oa's commands for running a fleet of hosts from
// one registry (fleet operators): fleet, provision and agent. Each parses
// its flags, calls package fleet and prints.
package fleetcmd

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// Group is the group's heading in oa --help and its top-level commands,
// in the order oa --help lists them.
func Group() cli.CommandGroup {
	return cli.CommandGroup{
		ID:       "fleet",
		Title:    "Run a fleet of hosts from one registry (fleet operators):",
		Commands: []*cobra.Command{newFleetCmd(), newProvisionCmd(), newAgentCmd()},
	}
}
