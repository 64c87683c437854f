package connector

import (
	"context"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
)

// openProcess starts cfg.Command with a minimal environment, in its own
// process group and process tree (package proc), and connects to it over
// stdio.
func openProcess(ctx context.Context, cfg Config, opts Options, timeout time.Duration) (*Session, error) {
	if cfg.Command == "" {
		return nil, blocking.New(blocking.ConnectorConfigInvalid, "no command")
	}
	program := cfg.program()
	env, err := proc.Environment(program, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctxRefusal(context.Cause(ctx))
	}
	srv, err := proc.New(program, env, opts.procOptions())
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Until the session exists, the end of octx ends the tree at once, so
	// a server that hangs in initialize cannot hold Open past its timeout.
	stopEarly := context.AfterFunc(octx, srv.Kill)
	router := &elicitRouter{}
	cs, err := newClient(router).Connect(octx, srv, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	stopEarly()
	if err == nil && srv.Err() != nil {
		_ = srv.End(cs)
		return nil, srv.Err()
	}
	if err != nil {
		_ = srv.End(nil)
		if srv.Err() != nil {
			return nil, srv.Err()
		}
		return nil, startError(octx, ctx)
	}
	return newSession(ctx, cs, &procTransport{server: srv}, router, timeout), nil
}

// program is what cfg says of the program to start.
func (cfg Config) program() proc.Program {
	return proc.Program{Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Settings: cfg.Settings, SecretFile: cfg.SecretFile, Confinement: cfg.Confinement}
}

// procOptions is what opts says of how a program is run.
func (opts Options) procOptions() proc.Options {
	return proc.Options{Stderr: opts.Stderr, Name: opts.Name, OwnedTrees: opts.OwnedTrees, PrivateDir: opts.PrivateDir, HostHome: opts.HostHome, Ownership: opts.ownership}
}

// procTransport is the transport of a session to a server oa started: the
// server with its process tree, spoken to over its stdio (proc.Server).
type procTransport struct {
	server *proc.Server
}

func (*procTransport) kind() Kind { return KindProcess }

func (*procTransport) traced(ctx context.Context) context.Context { return ctx }

// explain has nothing to add: a local server's failures are the session
// core's to name (a timeout, a protocol error, a broken pipe).
func (*procTransport) explain(context.Context) (error, bool) { return nil, false }

func (*procTransport) reachedBy() string { return "" }

// end ends the whole tree and verifies it (proc.Server.End).
func (p *procTransport) end(cs *mcp.ClientSession) error { return p.server.End(cs) }

// Enforcement is how a start of cfg's server is enforced on this host,
// or confinement_unavailable when it cannot be: what `oa connection
// verify` prints. The built-in sandbox runs in this process and a remote
// server runs no process here.
func Enforcement(cfg Config) (confine.Level, error) {
	switch {
	case cfg.Kind() == KindSandbox:
		return confine.Level{Mode: confine.ModeInProcess}, nil
	case cfg.Command == "":
		return confine.Level{Mode: confine.ModeNoProcess}, nil
	}
	return proc.Enforcement(cfg.Confinement)
}

// CheckSettings refuses cfg's settings (connection_setting_invalid) whose
// name is not a variable name, or that names a variable also taken from
// oa's environment (see proc.CheckSettings).
func CheckSettings(cfg Config) error { return proc.CheckSettings(cfg.program()) }
