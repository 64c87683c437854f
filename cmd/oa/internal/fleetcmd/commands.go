// Package fleetcmd holds oa's commands for running a fleet of hosts from
// one registry (fleet operators): fleet, provision and agent. Each parses
// its flags, calls package fleet and prints.
package fleetcmd

import "github.com/spf13/cobra"

// Commands are the group's top-level commands, in the order oa --help
// lists them.
func Commands() []*cobra.Command {
	return []*cobra.Command{newFleetCmd(), newProvisionCmd(), newAgentCmd()}
}
