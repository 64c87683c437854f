// Package auditcmd holds oa's commands for auditing (auditors): receipts,
// runs, audit and witness. Each parses its flags, calls the library
// (coordinator's receipt chain, audit, the ledger's witness) and prints.
package auditcmd

import "github.com/spf13/cobra"

// Commands are the group's top-level commands, in the order oa --help
// lists them.
func Commands() []*cobra.Command {
	return []*cobra.Command{newReceiptsCmd(), newRunsCmd(), newAuditCmd(), newWitnessCmd()}
}
