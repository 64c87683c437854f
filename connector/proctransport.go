package connector

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/stdioconn"
)

// openProcess starts cfg.Command with a minimal environment, in its own
// process group and process tree (see tree), and connects to it over
// stdio.
func openProcess(ctx context.Context, cfg Config, opts Options, timeout time.Duration) (*Session, error) {
	if cfg.Command == "" {
		return nil, blocking.New(blocking.ConnectorConfigInvalid, "no command")
	}
	env, err := childEnv(cfg, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctxRefusal(context.Cause(ctx))
	}
	l, err := prepareLaunch(cfg, opts, env)
	if err != nil {
		return nil, err
	}
	t, err := newTree(opts.OwnedTrees, opts.ownership)
	if err != nil {
		l.cleanup()
		return nil, err
	}
	limitCgroup(t.cgroup, cfg.Confinement)
	newCmd := func(cgroupFD int) *exec.Cmd {
		cmd := exec.Command(l.path, l.args...)
		// The tree's mark, inherited by what the server starts: with no
		// cgroup, a reaper takes a process left outside the server's
		// process group (setsid) for a member only while it carries it.
		cmd.Env = append(slices.Clip(l.env), TreeEnv+"="+t.id)
		cmd.Stderr = stderrFor(opts)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if l.userns {
			cmd.SysProcAttr = userNamespaceAttr(l.cloneflags)
			cmd.SysProcAttr.Setpgid = true
		}
		cmd.SysProcAttr.Cloneflags |= l.cloneflags
		if cgroupFD >= 0 {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
		}
		// A grandchild holding the stderr pipe must not keep Wait from
		// returning once the tree is dead.
		cmd.WaitDelay = time.Second
		return cmd
	}
	p := &procTransport{tree: t, cleanup: l.cleanup}

	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Until the session exists, the end of octx ends the tree at once, so
	// a server that hangs in initialize cannot hold Open past its timeout.
	stopEarly := context.AfterFunc(octx, p.kill)
	tr := &treeStdio{newCmd: newCmd, proc: p}
	router := &elicitRouter{}
	cs, err := newClient(router).Connect(octx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	stopEarly()
	if err == nil && tr.err != nil {
		_ = p.end(cs)
		return nil, tr.err
	}
	if err != nil {
		_ = p.end(nil)
		if tr.err != nil {
			return nil, tr.err
		}
		return nil, startError(octx, ctx)
	}
	return newSession(ctx, cs, p, router, timeout), nil
}

// procTransport is the transport of a session to a server oa started: the
// server with its process tree (see tree), spoken to over its stdio
// (treeStdio).
type procTransport struct {
	tree *tree
	mu   sync.Mutex
	cmd  *exec.Cmd // nil until started
	// cleanup removes what the start made for the server (its temporary
	// private folders) once the tree has ended; nil for nothing.
	cleanup func()
}

func (*procTransport) kind() Kind { return KindProcess }

func (*procTransport) traced(ctx context.Context) context.Context { return ctx }

// explain has nothing to add: a local server's failures are the session
// core's to name (a timeout, a protocol error, a broken pipe).
func (*procTransport) explain(context.Context) (error, bool) { return nil, false }

func (*procTransport) reachedBy() string { return "" }

// kill ends the whole tree at once: used when a deadline has already
// passed and there is no time to ask nicely.
func (p *procTransport) kill() {
	if p.tree.hasStarted() {
		p.tree.kill()
	}
}

// end ends the whole tree and verifies it: SIGTERM to every process of
// it, up to termGrace for them to go, then the tree killed, the server
// reaped (through the go-sdk's Close, which waits for the command, or by
// Wait when there is no session), and finally nothing of the tree may be
// able to run. Only then are its cgroup and owned-tree rows removed; a tree
// that would not end stays recorded, for ReapOrphans to end later.
func (p *procTransport) end(cs *mcp.ClientSession) error {
	err := p.endTree(cs)
	if err == nil && p.cleanup != nil {
		p.cleanup()
	}
	return err
}

// endTree is end without the cleanup.
func (p *procTransport) endTree(cs *mcp.ClientSession) error {
	t := p.tree
	if !t.hasStarted() {
		return t.release() // never started: only the cgroup to remove
	}
	t.stopSampling()
	t.signalAll(syscall.SIGTERM)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		if cs != nil {
			_ = cs.Close()
			return
		}
		p.mu.Lock()
		cmd := p.cmd
		p.mu.Unlock()
		_ = cmd.Wait() // "already called" when the go-sdk reaped it
	}()
	t.waitEnded(termGrace)
	t.kill()
	select {
	case <-reaped:
	case <-time.After(verifyWithin):
	}
	if !t.waitEnded(verifyWithin) {
		return blocking.New(blocking.ConnectorStopFailed, "processes of the server's tree are still running after SIGKILL")
	}
	return t.release()
}

// treeStdio is the stdio client transport (internal/stdioconn: the
// go-sdk's CommandTransport with lines read into one reused buffer),
// started into the tree.
type treeStdio struct {
	newCmd func(cgroupFD int) *exec.Cmd
	proc   *procTransport
	err    error // a failure to record the started server
}

// Connect starts the command through the go-sdk, into the tree's cgroup
// when it has one. When that start fails, it is tried once without the
// cgroup: if that works, this host cannot start into cgroups, and no
// later start tries.
func (t *treeStdio) Connect(ctx context.Context) (mcp.Connection, error) {
	tr := t.proc.tree
	cmd := t.newCmd(tr.cgroupFD())
	conn, err := (&stdioconn.Command{Cmd: cmd, TerminateDuration: termGrace}).Connect(ctx)
	if err != nil && cmd.Process == nil && tr.cgroup != "" {
		tr.dropCgroup()
		tr.forget() // the cgroup row; the tree is recorded again as processes
		cmd = t.newCmd(-1)
		conn, err = (&stdioconn.Command{Cmd: cmd, TerminateDuration: termGrace}).Connect(ctx)
		if cmd.Process != nil {
			disableCgroups()
		}
	}
	if cmd.Process == nil {
		return conn, err
	}
	t.proc.mu.Lock()
	t.proc.cmd = cmd
	t.proc.mu.Unlock()
	if rerr := tr.started(cmd); rerr != nil {
		t.err = rerr
	}
	return conn, err
}
