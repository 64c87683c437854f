package connector

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is which transport a connection's server is reached by: what Open
// chooses by, and the one place a Config is told to be the sandbox.
type Kind string

const (
	// KindProcess is a program oa starts and speaks to over stdio, in a
	// confined process tree of its own (procTransport).
	KindProcess Kind = "process"
	// KindRemote is a server reached over Streamable HTTP, or HTTP+SSE
	// (remoteTransport).
	KindRemote Kind = "remote"
	// KindSandbox is the built-in sandbox records connector, served in
	// this process (sandboxTransport).
	KindSandbox Kind = "sandbox"
)

// Kind is the transport cfg's server is reached by: remote when it names
// a URL, the sandbox when its Command is SandboxCommand, else a process.
func (cfg Config) Kind() Kind {
	switch {
	case cfg.Remote != nil:
		return KindRemote
	case cfg.Command == SandboxCommand:
		return KindSandbox
	}
	return KindProcess
}

// transport is what a Session holds of how it reaches its server beyond
// the MCP client session: the process tree it started, the HTTP side of a
// remote server, or the in-process sandbox server. Every operation of the
// session core is the same for all three; these are the points where they
// differ.
type transport interface {
	// kind names the transport.
	kind() Kind
	// traced prepares the context of one request so that end of it can be
	// explained (remote: a sendTrace); others return ctx as it is.
	traced(ctx context.Context) context.Context
	// explain names the refusal of a failed request from what the
	// transport saw of it; ok is false when it saw nothing to name.
	explain(ctx context.Context) (refusal error, ok bool)
	// reachedBy is how the server was reached (remote.TransportStreamable or
	// remote.TransportSSE) for a remote server, "" otherwise.
	reachedBy() string
	// end closes the client session cs and ends what the transport holds
	// (the whole process tree, the HTTP connections, the in-process
	// server); its error is the session's Close's.
	end(cs *mcp.ClientSession) error
}

// newSession is the session over cs through t, its requests bounded by
// timeout, ended when ctx ends.
func newSession(ctx context.Context, cs *mcp.ClientSession, t transport, router *elicitRouter, timeout time.Duration) *Session {
	s := &Session{cs: cs, transport: t, elicit: router, timeout: timeout, ended: make(chan struct{})}
	s.watch(ctx)
	return s
}

// Each transport is one of these three.
var (
	_ transport = (*procTransport)(nil)
	_ transport = (*remoteTransport)(nil)
	_ transport = (*sandboxTransport)(nil)
)
