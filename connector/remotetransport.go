package connector

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/internal/tokenstore"
)

// remoteTransport is the transport of a session to a remote server: the
// HTTP side of it (package remote), beyond the MCP session.
type remoteTransport struct {
	conn *remote.Connection
}

func (*remoteTransport) kind() Kind { return KindRemote }

// traced gives each operation its own send trace, so a failure can be
// told apart: never written, refused, or sent unanswered.
func (rt *remoteTransport) traced(ctx context.Context) context.Context {
	return rt.conn.Traced(ctx)
}

// explain names a failed request's refusal from its send trace.
func (rt *remoteTransport) explain(ctx context.Context) (error, bool) {
	return rt.conn.Explain(ctx)
}

func (rt *remoteTransport) reachedBy() string { return rt.conn.Via() }

// end closes the MCP session and the HTTP side; nothing of a remote
// server runs here to be ended.
func (rt *remoteTransport) end(cs *mcp.ClientSession) error {
	return rt.conn.End(cs)
}

// openRemote connects to a remote server over Streamable HTTP (or
// HTTP+SSE) and runs the initialize handshake (see remote.Connect).
func openRemote(ctx context.Context, cfg Config, opts Options, timeout time.Duration) (*Session, error) {
	r, err := remote.Normalize(*cfg.Remote)
	if err != nil {
		return nil, err
	}
	if cfg.Command != "" || len(cfg.Args) > 0 || len(cfg.Env) > 0 || len(cfg.Settings) > 0 || cfg.SecretFile != "" {
		return nil, blocking.New(blocking.ConnectorConfigInvalid, "a remote connection takes no command, args, env or secret file")
	}
	if ctx.Err() != nil {
		return nil, ctxRefusal(context.Cause(ctx))
	}
	router := &elicitRouter{}
	cs, conn, err := remote.Connect(ctx, r, remote.Dial{Client: newClient(router), Tokens: opts.Tokens, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return newSession(ctx, cs, &remoteTransport{conn: conn}, router, timeout), nil
}

// Login runs the OAuth 2.1 authorization-code login of the remote
// connection cfg (see remote.Login), its handshake run by the client every
// session speaks with.
func Login(ctx context.Context, cfg Config, opts remote.LoginOptions) error {
	return remote.Login(ctx, cfg.Remote, newClient(&elicitRouter{}), opts)
}

// Logout removes the stored login of connection cfg, asking its
// authorization server to revoke it first (see remote.Logout).
func Logout(ctx context.Context, cfg Config, store *tokenstore.Store) (remote.LogoutResult, error) {
	return remote.Logout(ctx, cfg.Remote, store)
}

// StoredLogin reports the state of the login stored for connection cfg
// (see remote.StoredLogin); it reads the store and sends nothing.
func StoredLogin(cfg Config, store *tokenstore.Store) remote.LoginState {
	return remote.StoredLogin(cfg.Remote, store)
}
