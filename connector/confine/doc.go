// Package confine confines a downstream MCP server with the kernel: a
// connection's Profile (recorded in its signed revision and in the plan)
// becomes a Spec of Landlock rules and resource limits, which a launcher
// applies to itself before it executes the server, so the server and
// every process it starts inherit them.
//
// The launcher is the program that started the server, run again:
// LauncherArgs gives the arguments that re-execute the running binary
// (Self, /proc/self/exe: the same file even if the one on disk has been
// replaced) with a hidden first argument. The init function of package
// launcher, which this package imports, recognises that argument before
// the program's main and most of its package inits run, restricts itself
// (rlimits, no_new_privs, Landlock) and executes the server; it never
// returns to the program. Because it lives in init, any
// binary that links the connector — oa itself, and every test binary of
// a package that starts servers — is its own launcher, with no hook to
// call from main or TestMain.
//
// Enforcement fails closed: Require refuses (confinement_unavailable),
// naming the missing piece, when the kernel's Landlock ABI is too old for
// a rule the profile needs, so a server is never started less confined
// than its profile says.
package confine
