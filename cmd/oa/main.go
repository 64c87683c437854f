// Command oa is the toolchain for governed agent workers: it compiles a
// worker bundle to canonical Worker IR, pushes it as an OCI artifact, signs
// and attests it, admits it on a host under the host's policy, projects,
// resolves and binds it, installs it into MCP clients, serves it with
// `oa coordinator serve` and exports and verifies the audit chain; `oa fleet`
// drives the host stages for many hosts from one registry.
//
// This package is the root command: the groups of commands, the exit
// status and crash handling. The commands live by group under internal/
// (publishcmd, hostcmd, runcmd, fleetcmd, auditcmd), sharing the flags and
// output of internal/cli. Each is thin (docs/ARCHITECTURE.md): it parses
// its flags with cobra, calls the library and prints, with `--json` on
// commands that print results; the libraries speak the domain, never flag
// names.
//
// Exit status: 0 on success, 2 when oa refuses (a blocking code; see
// `oa explain CODE`) or the command line is wrong (a usage error), 1 on a
// program fault; a crash (an unrecovered panic, running out of memory)
// kills the process with SIGABRT.
package main

import (
	"os"
)

func main() {
	crashBySignal()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
