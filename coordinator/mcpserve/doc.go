// Package mcpserve is the coordinator's MCP face: the go-sdk server that
// `oa coordinator serve` runs over stdio, and the one package of oa that
// serves MCP. It turns one client's calls into calls of a
// coordinator.Coordinator — the run engine, which speaks no MCP — and the
// engine's results into tool answers.
//
// It is a folder under coordinator rather than a stage of its own because
// it is the same stage seen from the client: it serves exactly the
// deployment a Coordinator opened, imports the coordinator and earlier
// stages only, and only cmd/oa imports it. In the stage order
// (TestStagesImportOnlyEarlierStages) it comes right after coordinator and
// before audit.
//
// Tools (server.go, server_schema.go): the six coordinator tools of
// contract.CoordinatorTools plus one tool per read-only capability, nothing
// else. Every tool has a description, an exact input and output schema
// (written out, never inferred from Go types, every object closed) and
// honest annotations; every answer is structuredContent (mirrored as JSON
// text) checked against the output schema before it is sent. A tool error
// is fixed copy (toolErr): never an error's text, a path, an input
// value or anything a downstream app said.
//
// Approval of a paused run goes to the person through form elicitation.
// Under protocol 2026-07-28 a server may not send elicitation/create while
// serving a request, so a tool answers with the multi-round-trip
// InputRequests result; the go-sdk turns the same result into an
// elicitation/create request for clients on older protocol versions. The
// RequestState is sealed by the host secret (Coordinator.SealState), bound
// to the tool, run, attention item, step, request_id and a keyed
// fingerprint of the inputs (Coordinator.Fingerprint), expires, and opens
// once: a forged, changed, expired or replayed state, or input responses
// without a valid state, are refused. The form shows the person the exact
// call the step would send, from the item's sealed proposed change
// (formcall.go): only in the elicitation request, never in a tool result.
//
// Questions: an app's question during an effect waits in the engine
// (Coordinator.WaitingQuestion) and is forwarded here as an input request
// of run_workflow or decide_attention_item (questionmcp.go); a downstream
// server's elicitation during a read is parked here between rounds
// (elicit.go). The person's answer reaches the app unchanged; a client that
// cannot be asked yields cancel, never an invented answer.
//
// The wire (wire.go): NewStdioTransport holds every client line to JSON-RPC
// 2.0 before the go-sdk reads it (CheckMessage) and rewrites every error
// answer to fixed copy (FixedError), so a bad line is answered and the
// session goes on.
package mcpserve
