// Package hostcmd holds oa's commands for hosting a worker (operators):
// host, policy, admit, admissions, revoke, status, project, registry,
// connection, resolve, bind and harness. Each parses its flags, calls the
// library (host, admit, projection, resolve, connection, bind, harness)
// and prints.
package hostcmd

import "github.com/spf13/cobra"

// Commands are the group's top-level commands, in the order oa --help
// lists them.
func Commands() []*cobra.Command {
	return []*cobra.Command{newHostCmd(), newPolicyCmd(), newAdmitCmd(), newAdmissionsCmd(), newRevokeCmd(), newStatusCmd(), newProjectCmd(), newRegistryCmd(), newConnectionCmd(), newResolveCmd(), newBindCmd(), newHarnessCmd()}
}
