package remote

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/tokenstore"
)

// sessionProtocolVersion is the version asked over HTTP+SSE and in a
// login's handshake: the last with the session handshake, the one oa asks
// stdio servers for (a server on the older transport predates the
// stateless version).
const sessionProtocolVersion = "2025-11-25"

// Dial is what connecting to a remote server takes besides its Config.
type Dial struct {
	// Client is the MCP client that runs the handshake and then the
	// session (the session core's, with its elicitation handling).
	Client *mcp.Client
	// Tokens is the token store of the connection's OAuth login (nil: a
	// connection that authorizes with OAuth is refused
	// remote_login_required).
	Tokens *tokenstore.Store
	// Timeout bounds the handshake.
	Timeout time.Duration
}

// Connection is the HTTP side of a session to a remote server, beyond the
// MCP session: what explains a failed request and what ending the session
// closes.
type Connection struct {
	http *http.Transport
	via  string // TransportStreamable or TransportSSE
	// endStream ends an HTTP+SSE session's long stream (nil otherwise).
	endStream context.CancelFunc
}

// Connect connects to the remote server r (as Normalize returned it) over
// Streamable HTTP and runs the initialize handshake, within d.Timeout. The
// standalone event stream is not opened (oa re-lists tools itself, and a
// server's requests during a call come on that call's stream), and a
// broken stream is never resumed by repeating a request: oa decides what a
// lost answer means. Only a server that answers 404 or 405 is tried over
// HTTP+SSE, whose stream lives until End or until ctx ends.
func Connect(ctx context.Context, r Config, d Dial) (*mcp.ClientSession, *Connection, error) {
	client, base, err := newHTTP(r)
	if err != nil {
		return nil, nil, err
	}
	if r.OAuth != nil {
		client.Transport.(*roundTripper).oauth = &oauthSource{remote: r, store: d.Tokens, client: newOAuthHTTP(base)}
	}
	octx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	c := &Connection{http: base}
	cs, err := c.connect(octx, ctx, r, client, d.Client)
	if err != nil {
		base.CloseIdleConnections()
		return nil, nil, err
	}
	return cs, c, nil
}

// Traced gives each operation its own send trace, so a failure can be
// told apart: never written, refused, or sent unanswered.
func (*Connection) Traced(ctx context.Context) context.Context {
	ctx, _ = withTrace(ctx)
	return ctx
}

// Explain names the refusal of a failed request from the send trace of
// its context (see Traced); ok is false when the trace holds nothing to
// name.
func (*Connection) Explain(ctx context.Context) (refusal error, ok bool) {
	tr := traceOf(ctx)
	if tr == nil {
		return nil, false
	}
	return requestFailure(tr)
}

// Via is the transport the server was reached over: TransportStreamable
// or TransportSSE.
func (c *Connection) Via() string { return c.via }

// End closes the MCP session cs, then the HTTP+SSE stream and the idle
// connections; nothing of a remote server runs here to be ended.
func (c *Connection) End(cs *mcp.ClientSession) error {
	_ = cs.Close()
	if c.endStream != nil {
		c.endStream()
	}
	c.http.CloseIdleConnections()
	return nil
}

// connect runs the handshake over Streamable HTTP and, only when the
// server answered that 404 or 405 and refused nothing by name, over the
// HTTP+SSE transport. octx bounds the handshake, ctx is the caller's.
func (c *Connection) connect(octx, ctx context.Context, r Config, client *http.Client, mc *mcp.Client) (*mcp.ClientSession, error) {
	tctx, tr := withTrace(octx)
	transport := &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: maxBody}
	cs, err := mc.Connect(tctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err == nil {
		c.via = TransportStreamable
		return cs, nil
	}
	if _, code := tr.state(); code != "" {
		return nil, tr.refusalOr(refusalFor(code, true))
	}
	if !tr.sawLegacy() || octx.Err() != nil {
		return nil, startError(octx, ctx)
	}
	return c.connectSSE(octx, ctx, r, client, mc)
}

// connectSSE runs the handshake over the HTTP+SSE transport. Its one
// stream lives as long as the session, so it is opened under the caller's
// context and ended with the session (endStream) — or when octx ends
// before the handshake is done.
func (c *Connection) connectSSE(octx, ctx context.Context, r Config, client *http.Client, mc *mcp.Client) (*mcp.ClientSession, error) {
	tctx, tr := withTrace(octx)
	life, endStream := context.WithCancel(context.WithoutCancel(tctx))
	stop := context.AfterFunc(octx, endStream)
	sse := &mcp.SSEClientTransport{Endpoint: r.URL, HTTPClient: client, MaxEventSize: maxBody}
	cs, err := mc.Connect(tctx, &streamIn{ctx: life, inner: sse}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocolVersion})
	if err != nil || !stop() {
		endStream()
		if _, code := tr.state(); code != "" {
			return nil, tr.refusalOr(refusalFor(code, true))
		}
		return nil, startError(octx, ctx)
	}
	c.via, c.endStream = TransportSSE, endStream
	return cs, nil
}

// streamIn connects inner under ctx instead of the handshake's context:
// an HTTP+SSE stream must outlive the handshake.
type streamIn struct {
	ctx   context.Context
	inner mcp.Transport
}

func (s *streamIn) Connect(context.Context) (mcp.Connection, error) { return s.inner.Connect(s.ctx) }

// startError is the refusal for a failed handshake with a remote server:
// the caller's cancel (connector_cancelled), else remote_timeout when the
// handshake's own time ran out (or the caller's deadline passed), else
// remote_start_failed.
func startError(octx, parent context.Context) error {
	switch {
	case parent.Err() != nil && !errors.Is(context.Cause(parent), context.DeadlineExceeded):
		return blocking.New(blocking.ConnectorCancelled, "the context was cancelled")
	case octx.Err() != nil:
		return blocking.New(blocking.RemoteTimeout, "the handshake took longer than the timeout")
	}
	return blocking.New(blocking.RemoteStartFailed, "the server did not complete the MCP initialize handshake")
}
