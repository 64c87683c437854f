// Package auditcmd holds oa's commands for auditing (auditors): receipts,
// runs, audit and witness. Each parses its flags, calls the library
// (coordinator's receipt chain, audit, the ledger's witness) and prints.
package auditcmd

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// Group is the group's heading in oa --help and its top-level commands,
// in the order oa --help lists them.
func Group() cli.CommandGroup {
	return cli.CommandGroup{
		ID:       "audit",
		Title:    "Audit it (auditors):",
		Commands: []*cobra.Command{newReceiptsCmd(), newRunsCmd(), newAuditCmd(), newWitnessCmd()},
	}
}
