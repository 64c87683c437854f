// Package proc starts a downstream MCP server program in a confined
// process tree of its own and ends that tree whole: the stdio side of a
// connector session to a server oa starts. The MCP session itself, and
// what is said over it, is package connector's; connector chooses this
// transport for a Config naming a Command, connects its client through
// the Server that New returns, and ends it with End.
//
//   - The start (server.go, launch.go): the program's environment is PATH,
//     HOME, the variables the connection names, its settings and the
//     entries of its secret file (mode 0600, package secretfile) —
//     nothing else of oa's environment (Environment). A confined program
//     starts through the confinement launcher (package confine: this
//     binary re-executed) with its profile resolved, private HOME and
//     TMPDIR, and namespaces where oa may make them, in a user namespace
//     of its own when oa lacks CAP_SYS_ADMIN (userns.go);
//     confinement_unavailable where the kernel cannot (Enforcement).
//   - The tree (tree.go, cgroup.go, procfs.go): a cgroup v2 of its own,
//     entered by the start itself, where the host has a writable one;
//     else a set of processes (pid + start time) found by walking /proc,
//     so a grandchild that called setsid is still owned. End ends the
//     whole tree (SIGTERM, then cgroup.kill, or SIGSTOP of every member
//     and SIGKILL) and verifies it ended.
//   - Owned trees (reap.go): with OwnedTrees, every tree is recorded in
//     the host's store while it lives, and ReapOrphans ends those whose
//     owner died, touching only processes proven members.
//   - Stderr (stderr.go): each line reaches the operator prefixed with the
//     connection's name, stripped of control sequences, bounded in length,
//     rate and total; never copied into a refusal.
//
// Refusals are *blocking.Error values whose text is fixed copy, rule
// names, counts and positions: never stderr, secret values or local
// paths.
package proc
