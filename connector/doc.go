// Package connector is how oa talks to downstream MCP servers: it starts a
// server over stdio with the go-sdk client (or connects the built-in sandbox
// records connector in-process), lists its tools into a normalized,
// digested Inventory, and calls them.
//
// The session core (connector.go, transport.go: listing, checking, calls,
// freshness, elicitation) is the same for every server; a Session holds
// one transport, chosen by Config.Kind — the one place a Config is told
// to be the sandbox — that reaches the server and is ended with it:
//
//   - procTransport (proctransport.go): a program started in a confined
//     process tree of its own (start, confinement, cgroups, user
//     namespaces, stderr, reaping orphans: package proc);
//   - remoteTransport (remotetransport.go): a remote server over
//     Streamable HTTP (or HTTP+SSE), with secret headers and OAuth login,
//     its HTTP side in package remote;
//   - sandboxTransport (sandboxtransport.go): the built-in sandbox
//     records connector, served in this process.
//
// Safety properties, each tested against real subprocesses:
//
//   - A server runs in its own process group and process tree: a cgroup v2
//     of its own where the host has a writable one, else a set of
//     processes (pid + start time) found by walking /proc, so a
//     grandchild that called setsid is still owned. Close, a timeout, or
//     the end of the context given to Open ends the whole tree (SIGTERM,
//     then cgroup.kill, or SIGSTOP of every member and SIGKILL) and
//     verifies it ended; a call that outlives its context ends the tree
//     and refuses with connector_timeout, since its effect is then
//     unknown. With OwnedTrees, every tree is recorded in the store while
//     it lives, and ReapOrphans ends those whose owner died (package
//     proc).
//   - A server's environment is PATH, HOME, the variables the connection
//     names and the entries of its secret file (mode 0600) — nothing else
//     of oa's environment.
//   - Every tool must have a valid unique name, a description and object
//     schemas oa can check; arguments are checked against the input schema
//     before they are sent, results against the output schema after.
//   - Refusals are *blocking.Error values whose text is fixed copy, rule
//     names, counts and positions: never stderr, secret values, argument or
//     result values, or local paths.
//
// Digests: a Tool's digest is sha256 over the RFC 8785 canonical JSON of
// the normalized tool (digest ""); the Inventory digest is sha256 over the
// canonical JSON of the tools sorted by name. Annotations are normalized to
// explicit values with the MCP defaults, so how a server spells a default
// does not change a digest.
//
// Remote servers are package remote's (see its documentation): Streamable
// HTTP, or HTTP+SSE after a 404 or 405, secret headers read per request,
// bodies bounded, failures named, and OAuth 2.1 whose tokens are kept in
// Options.Tokens; Login, Logout and StoredLogin here take a connection's
// Config and run remote's with the client every session speaks with.
//
// Every stdio server starts confined (packages proc and confine): the
// connection's confine.Profile becomes a Spec, and the launcher, this
// binary re-executed through /proc/self/exe, sets rlimits, no_new_privs
// and Landlock before it execs the server; confinement_unavailable where
// the kernel cannot. Enforcement and CheckSettings here take a
// connection's Config and run proc's.
// Session.Fresh answers the last listing unless the server announced
// tools/list_changed or it is older than a bound. Each tools/call is a
// telemetry span whose trace context goes downstream in _meta.
package connector
