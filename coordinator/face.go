package coordinator

import (
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the MCP face (package coordinator/mcpserve) reaches of the engine
// beyond the calls every caller makes (Run, GetRun, Decide, Read, SealState,
// OpenState): where operator diagnostics go, the host-keyed fingerprint its
// sealed states bind, the connection behind a capability, and an app's
// question waiting in this process for a person.

// Operator is where operator-only diagnostics go (Options.Operator), never
// the calling agent.
func (c *Coordinator) Operator() io.Writer { return c.opts.Operator }

// Fingerprint is a keyed fingerprint of parts under the host secret:
// length-prefixed, so no two lists of parts share one, and telling nothing
// of the parts without the secret. A caller binds one into a sealed state
// (SealState) so that the state cannot be carried over to other parts; the
// first part names what the fingerprint is for.
func (c *Coordinator) Fingerprint(parts ...[]byte) string { return fingerprint(c.secret, parts...) }

// ConnectionOf names the connection a capability of the bound plan is
// bound to ("" for a capability outside the plan).
func (ss *boundSession) ConnectionOf(capability string) string {
	if e, ok := ss.binding.Plan.Entry(capability); ok {
		return e.ConnectionID
	}
	return ""
}

// Question is an app's question during an effect, waiting in this process
// for a person's answer (effectquestion.go).
type Question struct {
	// Connection and Capability name where the question comes from.
	Connection string
	Capability string
	// Params is a copy of the app's request as sent: to be shown to a
	// person only, never logged or stored.
	Params *mcp.ElicitParams
	// TTL is how long the app's call waits for the answer at most; a
	// state sealed for the question need not outlive it.
	TTL time.Duration
}

// WaitingQuestion is the app's question of attention item id when a call
// of this process waits for its answer, else nil (the call is gone, or
// another coordinator process holds it).
func (dk *desk) WaitingQuestion(id string) *Question {
	l := dk.questions.get(id)
	if l == nil {
		return nil
	}
	params := *l.params
	return &Question{Connection: l.connection, Capability: l.capability, Params: &params, TTL: questionTTL}
}
