// Package publishcmd holds oa's commands for publishing a worker package
// (publishers and conformance authorities): init, compile, inspect, push,
// pull, copy, keys, sign, attest and verify. Each parses its flags, calls
// the library (compiler, pipeline, oci, signing) and prints.
package publishcmd

import (
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// Group is the group's heading in oa --help and its top-level commands,
// in the order oa --help lists them.
func Group() cli.CommandGroup {
	return cli.CommandGroup{
		ID:       "publish",
		Title:    "Publish a worker package (publishers, conformance authorities):",
		Commands: []*cobra.Command{newInitCmd(), newCompileCmd(), newInspectCmd(), newPushCmd(), newPullCmd(), newCopyCmd(), newKeysCmd(), newSignCmd(), newAttestCmd(), newVerifyCmd()},
	}
}
