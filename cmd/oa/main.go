// Command oa is the toolchain for governed agent workers: it compiles a
// worker bundle to canonical Worker IR, pushes it as an OCI artifact, signs
// and attests it, admits it on a host under the host's policy, projects,
// resolves and binds it, installs it into MCP clients, serves it with
// `oa coordinator serve` and exports and verifies the audit chain; `oa fleet`
// drives the host stages for many hosts from one registry.
//
// The commands are thin (docs/ARCHITECTURE.md): each parses its flags with
// cobra, calls one library function and prints, with `--json` on commands
// that print results; the libraries speak the domain, never flag names.
//
// Exit status: 0 on success, 2 when oa refuses (a blocking code; see
// `oa explain CODE`), 1 on a program fault; a crash (an unrecovered
// panic, running out of memory) kills the process with SIGABRT.
package main

import (
	"os"
)

func main() {
	crashBySignal()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
