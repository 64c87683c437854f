package connector

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
)

// remoteTransport is the transport of a session to a remote server: the
// HTTP side of it, beyond the MCP session.
type remoteTransport struct {
	http *http.Transport
	via  string // TransportStreamable or TransportSSE
	// endStream ends an HTTP+SSE session's long stream (nil otherwise).
	endStream context.CancelFunc
}

func (*remoteTransport) kind() Kind { return KindRemote }

// traced gives each operation its own sendTrace, so a failure can be told
// apart: never written, refused, or sent unanswered.
func (*remoteTransport) traced(ctx context.Context) context.Context {
	ctx, _ = withTrace(ctx)
	return ctx
}

// explain names a failed request's refusal from its sendTrace (see
// remoteFailure).
func (*remoteTransport) explain(ctx context.Context) (error, bool) {
	tr := traceOf(ctx)
	if tr == nil {
		return nil, false
	}
	return remoteFailure(tr)
}

func (rt *remoteTransport) reachedBy() string { return rt.via }

// end closes the MCP session, then the HTTP+SSE stream and the idle
// connections; nothing of a remote server runs here to be ended.
func (rt *remoteTransport) end(cs *mcp.ClientSession) error {
	_ = cs.Close()
	if rt.endStream != nil {
		rt.endStream()
	}
	rt.http.CloseIdleConnections()
	return nil
}

// openRemote connects to a remote server over Streamable HTTP and runs the
// initialize handshake. The standalone event stream is not opened (oa
// re-lists tools itself, and a server's requests during a call come on
// that call's stream), and a broken stream is never resumed by repeating
// a request: oa decides what a lost answer means.
func openRemote(ctx context.Context, cfg Config, opts Options, timeout time.Duration) (*Session, error) {
	r, err := NormalizeRemote(*cfg.Remote)
	if err != nil {
		return nil, err
	}
	if cfg.Command != "" || len(cfg.Args) > 0 || len(cfg.Env) > 0 || len(cfg.Settings) > 0 || cfg.SecretFile != "" {
		return nil, blocking.New(blocking.ConnectorConfigInvalid, "a remote connection takes no command, args, env or secret file")
	}
	if ctx.Err() != nil {
		return nil, ctxRefusal(context.Cause(ctx))
	}
	client, base, err := newRemoteHTTP(r)
	if err != nil {
		return nil, err
	}
	if r.OAuth != nil {
		client.Transport.(*remoteRoundTripper).oauth = &oauthSource{remote: r, store: opts.Tokens, client: newOAuthHTTP(base)}
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	router := &elicitRouter{}
	rt := &remoteTransport{http: base}
	cs, err := rt.connect(octx, ctx, r, client, router)
	if err != nil {
		base.CloseIdleConnections()
		return nil, err
	}
	return newSession(ctx, cs, rt, router, timeout), nil
}

// connect runs the handshake over Streamable HTTP and, only when the
// server answered that 404 or 405 and refused nothing by name, over the
// HTTP+SSE transport. octx bounds the handshake, ctx is the caller's.
func (rt *remoteTransport) connect(octx, ctx context.Context, r Remote, client *http.Client, router *elicitRouter) (*mcp.ClientSession, error) {
	tctx, tr := withTrace(octx)
	transport := &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true, MaxEventSize: maxRemoteBody}
	cs, err := newClient(router).Connect(tctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: remoteProtocolVersion})
	if err == nil {
		rt.via = TransportStreamable
		return cs, nil
	}
	if _, code := tr.state(); code != "" {
		return nil, tr.refusalOr(remoteRefusal(code, true))
	}
	if !tr.sawLegacy() || octx.Err() != nil {
		return nil, remoteStartError(octx, ctx)
	}
	return rt.connectSSE(octx, ctx, r, client, router)
}

// connectSSE runs the handshake over the HTTP+SSE transport. Its one
// stream lives as long as the session, so it is opened under the caller's
// context and ended with the session (endStream) — or when octx ends
// before the handshake is done.
func (rt *remoteTransport) connectSSE(octx, ctx context.Context, r Remote, client *http.Client, router *elicitRouter) (*mcp.ClientSession, error) {
	tctx, tr := withTrace(octx)
	life, endStream := context.WithCancel(context.WithoutCancel(tctx))
	stop := context.AfterFunc(octx, endStream)
	sse := &mcp.SSEClientTransport{Endpoint: r.URL, HTTPClient: client, MaxEventSize: maxRemoteBody}
	cs, err := newClient(router).Connect(tctx, &streamIn{ctx: life, inner: sse}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil || !stop() {
		endStream()
		if _, code := tr.state(); code != "" {
			return nil, tr.refusalOr(remoteRefusal(code, true))
		}
		return nil, remoteStartError(octx, ctx)
	}
	rt.via, rt.endStream = TransportSSE, endStream
	return cs, nil
}

// streamIn connects inner under ctx instead of the handshake's context:
// an HTTP+SSE stream must outlive the handshake.
type streamIn struct {
	ctx   context.Context
	inner mcp.Transport
}

func (s *streamIn) Connect(context.Context) (mcp.Connection, error) { return s.inner.Connect(s.ctx) }

// remoteStartError is the refusal for a failed handshake with a remote
// server: the caller's cancel or deadline, else remote_timeout when the
// handshake's own time ran out, else remote_start_failed.
func remoteStartError(octx, parent context.Context) error {
	switch {
	case parent.Err() != nil && !errors.Is(context.Cause(parent), context.DeadlineExceeded):
		return ctxRefusal(context.Cause(parent))
	case octx.Err() != nil:
		return blocking.New(blocking.RemoteTimeout, "the handshake took longer than the timeout")
	}
	return blocking.New(blocking.RemoteStartFailed, "the server did not complete the MCP initialize handshake")
}
