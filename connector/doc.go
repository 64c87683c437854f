// Package connector is how oa talks to downstream MCP servers: it starts a
// server over stdio with the go-sdk client (or connects the built-in sandbox
// records connector in-process), lists its tools into a normalized,
// digested Inventory, and calls them.
//
// Safety properties, each tested against real subprocesses:
//
//   - A server runs in its own process group. Close, a timeout, or the end
//     of the context given to Open ends the whole group (SIGTERM, then
//     SIGKILL) and verifies it ended; a call that outlives its context ends
//     the tree and refuses with connector_timeout, since its effect is then
//     unknown.
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
package connector
