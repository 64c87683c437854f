// Command oa is the toolchain for governed agent workers: it compiles worker
// bundles to canonical Worker IR and, in later stages, publishes, admits,
// resolves, binds and serves them.
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
