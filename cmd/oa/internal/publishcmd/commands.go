// Package publishcmd holds oa's commands for publishing a worker package
// (publishers and conformance authorities): init, compile, inspect, push,
// pull, copy, keys, sign, attest and verify. Each parses its flags, calls
// the library (compiler, pipeline, oci, signing) and prints.
package publishcmd

import "github.com/spf13/cobra"

// Commands are the group's top-level commands, in the order oa --help
// lists them.
func Commands() []*cobra.Command {
	return []*cobra.Command{newInitCmd(), newCompileCmd(), newInspectCmd(), newPushCmd(), newPullCmd(), newCopyCmd(), newKeysCmd(), newSignCmd(), newAttestCmd(), newVerifyCmd()}
}
