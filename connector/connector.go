package connector

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/tokenstore"
	"github.com/oa-dev/oa/telemetry"
)

// SandboxCommand is the Command of a connection to the built-in sandbox
// records connector (run in-process).
const SandboxCommand = "builtin:sandbox-records"

// protocolVersion is the MCP version oa asks downstream servers for. It is
// the last version before 2026-07-28 on purpose: from 2026-07-28 the go-sdk
// client may answer tools/list from a cache the server controls (SEP-2549),
// and oa must see the live list to catch drift before every call.
const protocolVersion = "2025-11-25"

// defaultTimeout bounds start + initialize + list when Options.Timeout is 0.
const defaultTimeout = 10 * time.Second

// maxPages bounds a tools/list walk, so a server handing out cursors
// forever cannot hold oa.
const maxPages = 1000

// Config is how to start one downstream MCP server over stdio. It never
// holds a secret value.
type Config struct {
	// Command is the program, or SandboxCommand; "" for a remote server.
	Command string `json:"command"`
	// Remote, when set, is a server reached over Streamable HTTP instead
	// of a program started over stdio.
	Remote *remote.Config `json:"remote,omitempty"`
	Args   []string       `json:"args"`
	// Env holds NAMES of environment variables passed to the server; their
	// values are read from oa's environment at start.
	Env []string `json:"env,omitempty"`
	// Settings are plain (non-secret) variables passed to the server with
	// their values, recorded in the connection's revision and shown
	// (--env NAME=VALUE): a setting such as a data file's path, which an
	// MCP client starting oa would not export. Never a secret.
	Settings map[string]string `json:"settings,omitempty"`
	// SecretFile is a file of NAME=VALUE lines, mode 0600 (refused
	// otherwise), read at start.
	SecretFile string `json:"secretFile,omitempty"`
	// Confinement is the kernel-enforced profile the server runs under;
	// nil is the default profile (confined: see confine.Profile), never
	// unconfined. The built-in sandbox runs inside oa and has none.
	Confinement *confine.Profile `json:"confinement,omitempty"`
}

// Options tune how a server is run. They are host settings, not part of a
// connection's identity.
type Options struct {
	// Stderr is where the server's stderr goes (operator only); nil
	// discards it. It is never copied into a refusal. Each line reaches
	// it prefixed with Name, stripped of control sequences and bounded
	// (see package proc).
	Stderr io.Writer
	// Name is the connection's name, shown before each line of its
	// server's stderr ("" shows "server").
	Name string
	// Timeout bounds start + initialize, and each tools/list walk; 0 means
	// 10s.
	Timeout time.Duration
	// SandboxDir is the state folder for SandboxCommand ("" keeps the
	// state in memory, per session).
	SandboxDir string
	// OwnedTrees, when set, records every process tree started, so that
	// if this process dies without ending one, the next ReapOrphans ends
	// it.
	OwnedTrees proc.OwnedTrees
	// PrivateDir is the folder of a confined server's private state and
	// temporary folders (proc.PrivateHome, proc.PrivateTmp: its HOME and
	// TMPDIR), kept across starts; "" gives each start new ones, removed
	// when it ends.
	PrivateDir string
	// HostHome is the host's $OA_HOME, which a confined server never sees
	// where it has a mount namespace of its own ("" hides only the host's
	// socket folders).
	HostHome string
	// Tokens is the token store of the connection's OAuth login, for a
	// remote connection that authorizes with OAuth (nil: such a
	// connection is refused remote_login_required).
	Tokens *tokenstore.Store
	// ownership is proc.OwnershipPIDs to own the tree as a set of processes
	// even where a cgroup could hold it (tests of that mode); "" chooses.
	ownership string
}

// CallResult is what a tool answered.
type CallResult struct {
	// Structured is the structuredContent in canonical JSON, or nil when
	// the server sent none.
	Structured json.RawMessage
	// Content is the answer's content blocks (text, images, audio,
	// resource links, embedded resources, as MCP defines them) as one
	// JSON array, kept for a successful answer of a tool without an
	// output schema only, bounded by MaxContentBytes (content.go); nil
	// otherwise.
	Content json.RawMessage
	// ContentCut is true when the blocks were over MaxContentBytes and
	// Content keeps what fit.
	ContentCut bool
	// IsError is true when the tool reported a tool error. A tool error's
	// Structured is not checked against the output schema.
	IsError bool
}

// Session is one running connection to a downstream server. Its methods
// are safe for concurrent use. A session ends on Close, when the context
// given to Open ends, when an operation times out or is cancelled, or when
// the server exits; after that every method refuses with connector_closed.
type Session struct {
	cs *mcp.ClientSession
	// transport is how the server is reached, and what ending the
	// session ends: a process tree, a remote server's HTTP side, or the
	// in-process sandbox.
	transport transport
	timeout   time.Duration
	stop      func() bool // detaches the watch on Open's context

	elicit *elicitRouter

	mu     sync.Mutex
	inv    *Inventory
	checks map[string]checker

	endOnce sync.Once
	endErr  error
	ended   chan struct{}
}

// Open starts the server cfg describes (or the built-in sandbox), runs the
// MCP initialize handshake and returns the session. The session lives until
// Close or until ctx ends, like exec.CommandContext.
func Open(ctx context.Context, cfg Config, opts Options) (*Session, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	switch cfg.Kind() {
	case KindRemote:
		return openRemote(ctx, cfg, opts, timeout)
	case KindSandbox:
		return openSandbox(ctx, cfg, opts, timeout)
	}
	return openProcess(ctx, cfg, opts, timeout)
}

// newClient returns the go-sdk client oa speaks to servers with. It offers
// form and URL elicitation and nothing else (no roots or sampling): a
// server's elicitation during a call goes to that call's Elicitor (the
// person behind the calling client), else it is answered cancel, and the
// answer goes to the server as the person gave it (elicitanswer.go). Offered
// always, so what a server lists never depends on who calls it. The
// middleware keeps tools/list results as they came, before the go-sdk
// drops tools it dislikes, so the inventory check sees everything the
// server listed.
func newClient(r *elicitRouter) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "oa", Version: "v1"}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler:     r.handle,
		ToolListChangedHandler: noteToolsChanged,
		// oa makes a call's input-required rounds itself (callRounds):
		// the go-sdk's would change the person's answers.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	c.AddSendingMiddleware(keepRawTools)
	c.AddReceivingMiddleware(answerElicitations(r))
	return c
}

// rawToolsKey marks the context of a tools/list call that wants the raw list.
type rawToolsKey struct{}

// keepRawTools copies the unfiltered tools of a tools/list result into the
// *[]*mcp.Tool found in the context.
func keepRawTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if dst, ok := ctx.Value(rawToolsKey{}).(*[]*mcp.Tool); ok && err == nil {
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				*dst = append([]*mcp.Tool(nil), lr.Tools...)
			}
		}
		return res, err
	}
}

// startError is the refusal for a failed start: a timeout or cancel if a
// context ended, else start_failed. The go-sdk's error text is dropped: it
// can quote what the server printed.
func startError(octx, parent context.Context) error {
	if parent.Err() != nil {
		return ctxRefusal(context.Cause(parent))
	}
	if octx.Err() != nil {
		return blocking.New(blocking.ConnectorTimeout, "start and initialize took longer than the timeout")
	}
	return blocking.New(blocking.ConnectorStartFailed, "the server did not complete the MCP initialize handshake")
}

// ctxRefusal maps why a context ended (context.Cause: a caller that ends
// its context with the cause DeadlineExceeded, as the coordinator's effect
// timer does, is a timeout) to its refusal.
func ctxRefusal(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return blocking.New(blocking.ConnectorTimeout, "the deadline passed")
	}
	return blocking.New(blocking.ConnectorCancelled, "the context was cancelled")
}

// watch ends the session when ctx ends.
func (s *Session) watch(ctx context.Context) {
	s.stop = context.AfterFunc(ctx, func() { _ = s.end() })
}

// Probe opens the server, lists its tools and closes it.
func Probe(ctx context.Context, cfg Config, opts Options) (*Inventory, error) {
	d, err := Describe(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	return &d.Inventory, nil
}

// Description is what a verification records of a server: its tools and,
// for a remote server, the protocol version it agreed to ("" for stdio,
// whose version oa chooses).
type Description struct {
	Inventory Inventory
	Protocol  string
	// Transport is how a remote server was reached (remote.TransportStreamable or
	// remote.TransportSSE); "" for a stdio server.
	Transport string
}

// Describe opens the server, lists its tools, notes the protocol version
// agreed (remote servers) and closes it.
func Describe(ctx context.Context, cfg Config, opts Options) (*Description, error) {
	s, err := Open(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	inv, err := s.Inventory(ctx)
	if cerr := s.Close(); err == nil && cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	d := &Description{Inventory: *inv}
	if s.Remote() {
		d.Protocol, d.Transport = s.Protocol(), s.transport.reachedBy()
	}
	return d, nil
}

// Inventory lists every tool (all pages), checks the list against the MCP
// tool rules and normalizes it. Identical servers give identical digests in
// any process. The last inventory is what Call checks arguments against.
func (s *Session) Inventory(ctx context.Context) (*Inventory, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	lctx = s.traced(lctx)
	changes, at := s.changesSeen(), time.Now()
	raw, err := s.listAll(lctx)
	if err != nil {
		return nil, s.failed(lctx, err)
	}
	inv, checks, err := newInventory(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.inv, s.checks = inv, checks
	s.mu.Unlock()
	s.remember(inv, changes, at)
	return inv, nil
}

// listAll walks tools/list to its last page and returns the tools as the
// server sent them.
func (s *Session) listAll(ctx context.Context) ([]*mcp.Tool, error) {
	var all []*mcp.Tool
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for range maxPages {
		var page []*mcp.Tool
		res, err := s.cs.ListTools(context.WithValue(ctx, rawToolsKey{}, &page), params)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if res.NextCursor == "" {
			return all, nil
		}
		if seen[res.NextCursor] {
			return nil, blocking.New(blocking.ConnectorInventoryInvalid, "the list's page cursor repeats")
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, blocking.New(blocking.ConnectorInventoryInvalid, "the list has more than %d pages", maxPages)
}

// Call calls tool with args, which must encode to a JSON object satisfying
// the tool's input schema (checked before anything is sent). A call that
// outlives ctx ends the server's process tree and refuses with
// connector_timeout (or connector_cancelled): its effect is then unknown.
func (s *Session) Call(ctx context.Context, tool string, args any) (res *CallResult, err error) {
	ctx, span := telemetry.StartCall(ctx, tool)
	defer func() { span.End(telemetry.CallCode(err, res != nil && res.IsError)) }()
	if err := s.usable(); err != nil {
		return nil, err
	}
	c, err := s.checker(ctx, tool)
	if err != nil {
		return nil, err
	}
	in, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	if !conforms(c.input, in) {
		return nil, blocking.New(blocking.ConnectorArgumentsInvalid, "the arguments break the input schema")
	}
	ctx = s.traced(ctx)
	defer s.elicit.enter(ctx)()
	// The call's trace context goes downstream in _meta (traceparent).
	out, err := s.callRounds(ctx, &mcp.CallToolParams{Meta: telemetry.ToMeta(ctx, nil), Name: tool, Arguments: json.RawMessage(in)})
	if err != nil {
		return nil, s.failed(ctx, err)
	}
	return checkResult(c, out)
}

// checker returns the resolved schemas of tool from the last inventory,
// listing the tools first if this session has not yet.
func (s *Session) checker(ctx context.Context, tool string) (checker, error) {
	s.mu.Lock()
	checks := s.checks
	s.mu.Unlock()
	if checks == nil {
		if _, err := s.Inventory(ctx); err != nil {
			return checker{}, err
		}
		s.mu.Lock()
		checks = s.checks
		s.mu.Unlock()
	}
	c, ok := checks[tool]
	if !ok {
		return checker{}, blocking.New(blocking.ConnectorToolUnknown, "the tool is not listed")
	}
	return c, nil
}

// encodeArgs returns the canonical JSON of args, which must be an object;
// nil means {}.
func encodeArgs(args any) ([]byte, error) {
	if args == nil {
		return []byte("{}"), nil
	}
	b, err := canonical.Marshal(args)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return nil, blocking.New(blocking.ConnectorArgumentsInvalid, "the arguments are not a JSON object")
	}
	return b, nil
}

// checkResult canonicalizes the structured content and holds a successful
// result to the tool's output schema; a successful result of a tool
// without one keeps its content blocks, bounded.
func checkResult(c checker, res *mcp.CallToolResult) (*CallResult, error) {
	out := &CallResult{IsError: res.IsError}
	if res.StructuredContent != nil {
		b, err := canonical.Marshal(res.StructuredContent)
		if err != nil {
			return nil, blocking.New(blocking.ConnectorResultInvalid, "the structured content is not JSON")
		}
		out.Structured = b
	}
	if res.IsError {
		return out, nil
	}
	if c.output == nil {
		// No output schema: the answer is its content (text, most often).
		out.Content, out.ContentCut = keepContent(res.Content)
		return out, nil
	}
	if out.Structured == nil {
		return nil, blocking.New(blocking.ConnectorResultInvalid, "the tool has an output schema but sent no structured content")
	}
	if !conforms(c.output, out.Structured) {
		return nil, blocking.New(blocking.ConnectorResultInvalid, "the structured content breaks the output schema")
	}
	return out, nil
}

// failed turns an error of a request into a refusal. A timeout, a cancel
// or a server that went away ends the session (and the process tree); a
// protocol error answered by a live server leaves it open.
func (s *Session) failed(ctx context.Context, err error) error {
	if r := blocking.Refusals(err); r != nil {
		return err
	}
	if refusal, ok := s.transport.explain(ctx); ok {
		_ = s.end()
		return refusal
	}
	if ctx.Err() != nil {
		_ = s.end()
		return ctxRefusal(context.Cause(ctx))
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && !s.isEnded() {
		return blocking.New(blocking.ConnectorCallFailed, "the server answered with a protocol error")
	}
	// Anything but a JSON-RPC error answer means the connection broke (the
	// server exited, or wrote something that is not JSON-RPC): end it.
	_ = s.end()
	return blocking.New(blocking.ConnectorCallFailed, "the server ended or broke the connection during the request")
}

// traced prepares ctx for one operation of the session, so that its
// transport can explain a failure (see transport.traced).
func (s *Session) traced(ctx context.Context) context.Context {
	return s.transport.traced(ctx)
}

// Protocol is the MCP protocol version the server agreed to.
func (s *Session) Protocol() string {
	if r := s.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// Sandbox reports whether the session is the built-in sandbox records
// connector (SandboxCommand), served in this process, whose closed error
// words are oa's own.
func (s *Session) Sandbox() bool { return s.transport.kind() == KindSandbox }

// Remote reports whether the session is to a remote server.
func (s *Session) Remote() bool { return s.transport.kind() == KindRemote }

// usable refuses once the session has ended.
func (s *Session) usable() error {
	if s.isEnded() {
		return blocking.New(blocking.ConnectorClosed, "the session has ended")
	}
	return nil
}

func (s *Session) isEnded() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// Close ends the session: the server's whole process tree is ended
// (SIGTERM, then killed) and its end verified. It is safe to call more than
// once; every call returns the first outcome.
func (s *Session) Close() error {
	return s.end()
}

// end runs the shutdown once.
func (s *Session) end() error {
	s.endOnce.Do(func() {
		close(s.ended)
		s.forgetFreshness()
		if s.stop != nil {
			s.stop()
		}
		s.endErr = s.transport.end(s.cs)
	})
	return s.endErr
}
