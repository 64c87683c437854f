// Package hostcmd holds oa's commands for hosting a worker (operators):
// host, policy, admit, admissions, revoke, status, project, registry,
// connection, resolve, bind and harness. Each parses its flags, calls the
// library (host, admit, projection, resolve, connection, bind, harness)
// and prints.
package hostcmd

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// Group is the group's heading in oa --help and its top-level commands,
// in the order oa --help lists them.
func Group() cli.CommandGroup {
	return cli.CommandGroup{
		ID:       "host",
		Title:    "Host it (operators: admit, resolve, bind, install into clients):",
		Commands: []*cobra.Command{newHostCmd(), newPolicyCmd(), newAdmitCmd(), newAdmissionsCmd(), newRevokeCmd(), newStatusCmd(), newProjectCmd(), newRegistryCmd(), newConnectionCmd(), newResolveCmd(), newBindCmd(), newHarnessCmd()},
	}
}
