package main

import (
	"runtime/debug"
	"syscall"
)

// crashBySignal makes a crash of this process read as one: Go's runtime
// otherwise ends an unrecovered panic (in any goroutine), a fatal error
// such as "out of memory" and SIGQUIT with exit status 2, which is oa's
// status for a refusal. With the traceback level "crash" the runtime
// prints the stacks and then kills the process with SIGABRT, so a caller
// sees "killed by a signal" (128+6 in a shell), never 2. The core file
// SIGABRT would write is turned off: a crashing oa may hold a decrypted
// signing key or a connection's secret in memory, and a core dump would
// put it on disk (processes oa starts, such as connectors, inherit the
// lowered limit). A runtime that fails before main runs (too little
// address space to start) still exits 2: nothing of oa ran, and it never
// prints "oa: refused". Called first thing in main.
func crashBySignal() {
	debug.SetTraceback("crash")
	var core syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &core) == nil && core.Cur != 0 {
		core.Cur = 0
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &core)
	}
}
