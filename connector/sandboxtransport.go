package connector

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/internal/stdioconn"
)

// openSandbox connects the in-process sandbox server through in-memory
// transports, so the same client code lists and calls it.
func openSandbox(ctx context.Context, cfg Config, opts Options, timeout time.Duration) (*Session, error) {
	if len(cfg.Args) > 0 || len(cfg.Env) > 0 || len(cfg.Settings) > 0 || cfg.SecretFile != "" || !cfg.Confinement.IsDefault() {
		return nil, blocking.New(blocking.ConnectorConfigInvalid, "the sandbox connector takes no args, env, secret file or confinement")
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The sandbox speaks over an in-process pipe read through stdioconn,
	// as a subprocess's stdio is: the go-sdk's in-memory transport
	// allocates 32 KiB per message decoded.
	st, ct := stdioconn.Pipe()
	ss, err := sandbox.NewServer(opts.SandboxDir).Connect(octx, st, nil)
	if err != nil {
		return nil, blocking.New(blocking.ConnectorStartFailed, "the sandbox connector did not start")
	}
	router := &elicitRouter{}
	cs, err := newClient(router).Connect(octx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		_ = ss.Close()
		return nil, startError(octx, ctx)
	}
	return newSession(ctx, cs, &sandboxTransport{server: ss}, router, timeout), nil
}

// sandboxTransport is the transport of a session to the built-in sandbox:
// its server side, served in this process.
type sandboxTransport struct {
	server *mcp.ServerSession
}

func (*sandboxTransport) kind() Kind { return KindSandbox }

func (*sandboxTransport) traced(ctx context.Context) context.Context { return ctx }

// explain has nothing to add: the sandbox's failures are the session
// core's to name.
func (*sandboxTransport) explain(context.Context) (error, bool) { return nil, false }

func (*sandboxTransport) reachedBy() string { return "" }

// end closes both sides of the in-process pipe.
func (st *sandboxTransport) end(cs *mcp.ClientSession) error {
	_ = cs.Close()
	_ = st.server.Close()
	return nil
}
