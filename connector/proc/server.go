package proc

import (
	"context"
	"io"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/internal/stdioconn"
)

// Program is a server program to start, as a connection records it
// (connector.Config's share of it). It never holds a secret value.
type Program struct {
	// Command is the program to run.
	Command string
	// Args are its arguments.
	Args []string
	// Env holds NAMES of environment variables passed to it; their values
	// are read from oa's environment at start.
	Env []string
	// Settings are plain (non-secret) variables passed with their values.
	Settings map[string]string
	// SecretFile is a file of NAME=VALUE lines, mode 0600, read at start.
	SecretFile string
	// Confinement is the profile it runs under; nil is the default
	// profile (confined), never unconfined.
	Confinement *confine.Profile
}

// Options tune how a program is run: host settings, not part of a
// connection's identity.
type Options struct {
	// Stderr is where the server's stderr goes, each line prefixed with
	// Name, stripped of control sequences and bounded; nil discards it.
	Stderr io.Writer
	// Name is the connection's name ("" shows "server").
	Name string
	// OwnedTrees, when set, records the tree while it lives, so that if
	// this process dies without ending it, the next ReapOrphans does.
	OwnedTrees OwnedTrees
	// PrivateDir is the folder of a confined server's private HOME and
	// TMPDIR (PrivateHome, PrivateTmp), kept across starts; "" gives each
	// start new ones, removed when it ends.
	PrivateDir string
	// HostHome is the host's $OA_HOME, which a confined server never sees
	// where it has a mount namespace of its own.
	HostHome string
	// Ownership is OwnershipPIDs to own the tree as a set of processes even
	// where a cgroup could hold it (tests of that mode); "" chooses.
	Ownership string
}

// Server is one program started (once connected) in a process tree of its
// own (see tree), spoken to over its stdio. It is the mcp.Transport the
// session's client connects through, and what ending the session ends.
type Server struct {
	tree    *tree
	newCmd  func(cgroupFD int) *exec.Cmd
	mu      sync.Mutex
	cmd     *exec.Cmd // nil until started
	err     error     // a failure to record the started server
	cleanup func()    // removes the start's private folders once the tree has ended
}

// New prepares program p to start with environment env (see Environment):
// its launch (directly, or through the confinement launcher) and its tree,
// recorded in opts.OwnedTrees. Nothing runs until Connect; End releases
// what New made even then. A kernel that cannot enforce the profile
// refuses (confinement_unavailable) here.
func New(p Program, env []string, opts Options) (*Server, error) {
	l, err := prepareLaunch(p, opts, env)
	if err != nil {
		return nil, err
	}
	t, err := newTree(opts.OwnedTrees, opts.Ownership)
	if err != nil {
		l.cleanup()
		return nil, err
	}
	limitCgroup(t.cgroup, p.Confinement)
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
	return &Server{tree: t, newCmd: newCmd, cleanup: l.cleanup}, nil
}

// Connect starts the program, into the tree's cgroup when it has one, and
// returns its stdio as an MCP connection (internal/stdioconn: the go-sdk's
// CommandTransport with lines read into one reused buffer). When that start
// fails, it is tried once without the cgroup: if that works, this host
// cannot start into cgroups, and no later start tries. A server that
// started but could not be recorded is connected all the same; Err says
// so, and the caller ends it.
func (s *Server) Connect(ctx context.Context) (mcp.Connection, error) {
	tr := s.tree
	cmd := s.newCmd(tr.cgroupFD())
	conn, err := (&stdioconn.Command{Cmd: cmd, TerminateDuration: termGrace}).Connect(ctx)
	if err != nil && cmd.Process == nil && tr.cgroup != "" {
		tr.dropCgroup()
		tr.forget() // the cgroup row; the tree is recorded again as processes
		cmd = s.newCmd(-1)
		conn, err = (&stdioconn.Command{Cmd: cmd, TerminateDuration: termGrace}).Connect(ctx)
		if cmd.Process != nil {
			disableCgroups()
		}
	}
	if cmd.Process == nil {
		return conn, err
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	if rerr := tr.started(cmd); rerr != nil {
		s.mu.Lock()
		s.err = rerr
		s.mu.Unlock()
	}
	return conn, err
}

// Err is the refusal of a start the owned trees could not record, nil
// otherwise.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Cgroup is the cgroup folder of the server's tree, "" when it is owned
// as a set of processes.
func (s *Server) Cgroup() string { return s.tree.cgroup }

// Kill ends the whole tree at once: for when a deadline has already passed
// and there is no time to ask nicely.
func (s *Server) Kill() {
	if s.tree.hasStarted() {
		s.tree.kill()
	}
}

// End ends the whole tree and verifies it: SIGTERM to every process of
// it, up to termGrace for them to go, then the tree killed, the server
// reaped (through the go-sdk's Close of cs, which waits for the command,
// or by Wait when cs is nil), and finally nothing of the tree may be able
// to run. Only then are its cgroup, owned-tree rows and private folders
// removed; a tree that would not end stays recorded, for ReapOrphans to
// end later (connector_stop_failed).
func (s *Server) End(cs *mcp.ClientSession) error {
	err := s.endTree(cs)
	if err == nil && s.cleanup != nil {
		s.cleanup()
	}
	return err
}

// endTree is End without the cleanup.
func (s *Server) endTree(cs *mcp.ClientSession) error {
	t := s.tree
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
		s.mu.Lock()
		cmd := s.cmd
		s.mu.Unlock()
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
