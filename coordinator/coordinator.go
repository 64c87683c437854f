// Package coordinator owns a deployment's consequential state: it alone
// advances runs, authorizes effects, evaluates outcomes and issues
// receipts. It refuses any run whose recomputed plan digest is not the
// approved one: at session start, at the start of every run and again
// before every step that reaches a downstream server (bind.Check). It
// serves no MCP itself: its MCP face, the go-sdk server `oa coordinator
// serve` runs, is package coordinator/mcpserve, which reaches the engine
// through exported methods only (face.go holds those only the face needs).
//
// Session start (Open): the downstream process trees a dead coordinator of
// this host left running are reaped first (proc.ReapOrphans); the store
// is held to the host-signed heads (ledger.CheckStore, integrity.go: at start
// and before every new attempt, a disagreement is host_records_disagree
// before any effect); the binding is verified, the admission active, the plan
// recomputed and equal to the bound one, and every downstream tool list the
// verified one. Every downstream server started is recorded in the host's
// owned process trees (host.OwnedTrees), so a coordinator killed with SIGKILL
// leaves nothing the next start does not end.
//
// The engine (Run, GetRun): durable runs keyed by request_id with a keyed
// input fingerprint and at most five attempts; steps evaluated in
// component.Pool workers under the policy's evaluation budget (over it:
// evaluation_over_budget or check_over_budget, never retried); at most
// Options.MaxRuns runs executing at once; the one plan check (bind.Checker)
// at the start of every attempt and before every step that reaches a
// downstream server; effects marked in flight before they are sent; approvals
// that pause and resume without repeating a completed effect; run rows
// carrying a host MAC checked before a replay or retry acts on them
// (run_record_tampered). Results come from contract.Reasons.
//
// Attention items and decisions (Decide, DecideAttention: approve, reject,
// escalate, skip of a step the IR declares skippableWhile; teach.go's signed
// teach requests). A run's terminal attempt is sealed into the host's signed
// record through package ledger (receipt, head checkpoint, receipt key pin),
// and its runs and attention items are stored through the ledger's typed
// store; verifying that record is the ledger's, not the engine's. Request
// states for approvals are sealed with an expiring, single-use HMAC
// (SealState, OpenState).
//
// A downstream server's question during an effect waits here
// (effectquestion.go) for the face or the host (questionsock.go) to bring a
// person's answer. Runs, steps, plan checks and seals are telemetry spans; a
// client's _meta traceparent parents the run.
package coordinator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/coalesce"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// Coordinator serves one bound deployment. It is the exported face of
// its parts, each owning its own fields: the boundSession (the binding,
// the release, the plan check and the downstream sessions), the engine
// (runs), the evaluator (the worker pool), the storeGuard (the store
// checks against the signed heads), the desk (questions, attention,
// decisions) and the env they all read. The parts are named fields, not
// embedded, so that code here names the part it calls and the
// Coordinator's method set is only its own: each exported method a part
// implements is forwarded explicitly (forward.go). Only env, plain data
// every part reads, is embedded.
type Coordinator struct {
	*env
	bound  *boundSession
	desk   *desk
	engine *engine
	eval   *evaluator
	guard  *storeGuard
	// witnessing is closed when the witness loop ended (witness.go); nil
	// when the policy names no witnesses.
	witnessing chan struct{}
}

// engine runs runs: their slots, the runs executing here, their intakes,
// the run writer (their writes and owed changes), each step and its
// effect, guard and plan check, each state change through the run's
// state machine. It reads the session's
// binding and sessions, evaluates through the evaluator, checks the store
// through the guard and pauses on the desk.
type engine struct {
	*env
	bound *boundSession
	eval  *evaluator
	guard *storeGuard
	desk  *desk

	// runs counts the runs (and the start's store count) Close waits for.
	runs sync.WaitGroup
	// slots holds one token per run executing (Options.MaxRuns).
	slots chan struct{}

	mu     sync.Mutex
	closed bool
	// active holds a channel per run this process is executing, closed
	// when the run stops (terminal or paused).
	active map[string]chan struct{}
	// writer writes the runs executing here and holds the changes that
	// ride on their next write (ledger.RunWriter).
	writer *ledger.RunWriter[runState]
	// intakes holds the intake of each new run still being taken in
	// while its first steps run (intake.go).
	intakes intakes
	// holdIntake, set by a test only (HoldIntake), runs before every new
	// run's intake: nil in production, where nothing waits there.
	holdIntake func()
}

// stopClaiming makes every later claim of a run fail: the coordinator
// is closing.
func (eng *engine) stopClaiming() {
	eng.mu.Lock()
	eng.closed = true // no run is claimed from now on
	eng.mu.Unlock()
}

// env is what every part of a coordinator reads and none changes after
// the start: the options, the host, its ledger and secret, this process
// as a run's owner, and the session's life.
type env struct {
	opts   Options
	host   *host.Host
	ledger *ledger.Ledger
	secret []byte
	me     owner
	// life ends every downstream session and run when the coordinator
	// closes.
	life   context.Context
	cancel context.CancelCauseFunc
}

// evaluator evaluates the release's evaluators (a step's arguments and
// predicates) in the session's worker pool, and holds each job's inputs
// to its schema.
type evaluator struct {
	pool     *component.Pool
	artifact *oci.Artifact
	// inputSchemas holds each job's input schema, resolved once
	// (engine.go, checkInputs): the artifact is fixed for the session.
	inputSchemas sync.Map
}

// storeGuard holds the store to the host-signed heads before every new
// attempt (integrity.go).
type storeGuard struct {
	*env
	// heads remembers the signed heads already verified; counted is
	// closed once the receipts and runs were counted against them, with
	// countErr the disagreement found.
	heads    ledger.HeadCache
	counted  chan struct{}
	countErr error
	// storeChecks joins the store checks of attempts starting at once
	// (beforeAttempt).
	storeChecks coalesce.Read[struct{}]
}

// desk is where a coordinator meets persons: the apps' questions waiting
// for an answer, attention items and their decisions, the notices of a
// paused run. It resumes a decided run through the engine.
type desk struct {
	*env
	eng *engine
	// questions holds the apps' questions waiting for a person
	// (effectquestion.go).
	questions questions
}

// boundSession is what a coordinator's session holds: the verified
// binding and its release, the one plan check, the read tools it serves
// and the downstream sessions it opened.
type boundSession struct {
	*env
	binding       *bind.Binding
	checker       *bind.Checker
	bindingDigest string
	art           *oci.Artifact
	readTools     []ReadTool
	// probed is closed when a probe run in the background ended
	// (Options.ProbeInBackground); nil when none runs.
	probed chan struct{}

	mu       sync.Mutex
	sessions map[string]*connector.Session
}

// ReadTool is a read-only capability served as its own tool, under the
// MCP-safe Name contract.ToolName gives its capability key.
type ReadTool struct {
	Name         string          `json:"name"`
	Capability   string          `json:"capability"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// Open starts serving the deployment: the binding must verify, the release
// be actively admitted, the recomputed plan be the bound one and (unless
// NoProbe) every downstream tool list be the verified one. Which link
// changed is told to opts.Operator only.
func Open(ctx context.Context, opts Options) (*Coordinator, error) {
	if opts.Operator == nil {
		opts.Operator = io.Discard
	}
	if opts.EffectTimeout == 0 {
		opts.EffectTimeout = 30 * time.Second
	}
	h, err := host.Open(ctx, opts.Home)
	if err != nil {
		return nil, err
	}
	// The owned process trees' rows are authenticated with the
	// coordinator secret: only rows a coordinator of this host wrote are
	// acted on.
	secret, err := ledger.Open(h).Secret()
	if err != nil {
		h.Close()
		return nil, err
	}
	reapOrphans(ctx, h, secret, opts.Operator)
	c, err := open(ctx, h, opts)
	if err != nil {
		h.Close()
		return nil, err
	}
	return c, nil
}

func open(ctx context.Context, h *host.Host, opts Options) (*Coordinator, error) {
	b, err := bind.Current(ctx, h, opts.Deployment)
	if err != nil {
		return nil, err
	}
	en := &env{opts: opts, host: h, me: self()}
	c := &Coordinator{env: en, bound: &boundSession{env: en, binding: b, sessions: map[string]*connector.Session{}}}
	c.desk = &desk{env: en}
	c.guard = &storeGuard{env: en}
	raw, err := canonical.Marshal(b)
	if err != nil {
		return nil, err
	}
	c.bound.bindingDigest = ir.DigestBytes(raw)
	if opts.Client != "" && opts.Installation == nil {
		if c.opts.Installation, err = installationFor(h, opts); err != nil {
			return nil, err
		}
	}
	// Evaluations run in worker processes under the host's budget
	// (component.Pool): a runaway evaluator ends its run, never the host.
	pool, err := component.NewPool(h.Policy.EvaluationBudget())
	if err != nil {
		return nil, err
	}
	c.eval = &evaluator{pool: pool}
	if c.bound.art, err = c.bound.openRelease(ctx); err != nil {
		return nil, err
	}
	c.eval.artifact = c.bound.art
	c.engine = &engine{env: en, bound: c.bound, eval: c.eval, guard: c.guard, desk: c.desk,
		slots: make(chan struct{}, cmp.Or(max(opts.MaxRuns, 0), DefaultMaxRuns)), active: map[string]chan struct{}{}}
	c.desk.eng = c.engine
	c.ledger = ledger.Open(h)
	if c.secret, err = c.ledger.Secret(); err != nil {
		return nil, err
	}
	c.engine.writer = ledger.NewRunWriter(c.ledger, c.engine.runStates())
	// Loaded here, so a receipt key that does not load refuses the
	// start, not the first seal.
	if _, err = c.ledger.ReceiptSigner(); err != nil {
		return nil, err
	}
	// The store must agree with the host-signed heads before anything
	// is served: a removed run, receipt, checkpoint or pin is refused
	// here, not met after an effect.
	heads, err := c.ledger.CheckStore(ctx, &c.guard.heads, false)
	if err != nil {
		fmt.Fprintf(opts.Operator, "oa coordinator: deployment %s: the host's records disagree with its signed head; not serving (run oa receipts verify)\n", opts.Deployment)
		return nil, err
	}
	c.guard.storeChecks.Fn = c.guard.checkStore
	c.bound.checker = bind.NewChecker(h, b, c.bound.art)
	c.life, c.cancel = context.WithCancelCause(context.Background())
	c.startWitnessing()
	c.guard.countStore(heads, &c.engine.runs)
	plan, err := c.bound.checkPlan(ctx)
	if err != nil {
		c.cancel(errClosing)
		return nil, err
	}
	switch {
	case opts.NoProbe:
	case opts.ProbeInBackground:
		c.bound.probeInBackground(plan)
	default:
		if err := c.bound.probe(ctx, plan); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.bound.buildReadTools(ctx, plan); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// probe starts every connection of the plan and holds its live tool list
// to the plan before the session is served. The connections start at
// once, each in its own goroutine, so a session start waits for the
// slowest server rather than for the sum of them; each connection is
// listed once, and its other capabilities are held to that same listing
// (Fresh within probeReuse). The refusal returned is that of the first
// capability, in plan order, whose check failed.
func (ss *boundSession) probe(ctx context.Context, plan *resolve.Plan) error {
	byConnection := map[string][]int{}
	var order []string
	for i, e := range plan.Capabilities {
		if byConnection[e.ConnectionID] == nil {
			order = append(order, e.ConnectionID)
		}
		byConnection[e.ConnectionID] = append(byConnection[e.ConnectionID], i)
	}
	errs := make([]error, len(plan.Capabilities))
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() {
			for n, i := range byConnection[id] {
				maxAge := time.Duration(0) // the first lists the tools
				if n > 0 {
					maxAge = probeReuse
				}
				if _, errs[i] = ss.probeSession(ctx, plan.Capabilities[i], maxAge); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// probeInBackground runs the probe in the background (Options.
// ProbeInBackground): sessions wait for it (session), and its refusal is
// the operator's to read, each step that needs the server refused again
// when it opens the session anew.
func (ss *boundSession) probeInBackground(plan *resolve.Plan) {
	probed := make(chan struct{})
	ss.probed = probed
	go func() {
		defer close(probed)
		if err := ss.probe(ss.life, plan); err != nil && ss.life.Err() == nil {
			fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: a downstream server failed its check at start (%v); the steps that need it are refused until it checks\n", ss.opts.Deployment, err)
		}
	}()
}

// waitProbe waits for a probe running in the background, if any.
func (ss *boundSession) waitProbe(ctx context.Context) error {
	if ss.probed == nil {
		return nil
	}
	select {
	case <-ss.probed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// probeReuse is how old the listing of a connection may be for its other
// capabilities at session start: the same start's listing.
const probeReuse = time.Minute

func (en *env) now() time.Time {
	if en.opts.Now != nil {
		return en.opts.Now()
	}
	return time.Now()
}

// Deployment is the deployment served.
func (c *Coordinator) Deployment() string { return c.opts.Deployment }

// PlanDigest is the digest of the bound plan served (planDigest).
func (ss *boundSession) PlanDigest() string { return ss.binding.PlanDigest }

// ToolNames lists every tool the MCP server serves: the coordinator's
// own, then one per read-only capability.
func (ss *boundSession) ToolNames() []string {
	names := slices.Clone(contract.CoordinatorTools)
	for _, t := range ss.readTools {
		names = append(names, t.Name)
	}
	return names
}

// Mode is ModeSandbox when serving the built-in demo, else ModeDeployment.
func (c *Coordinator) Mode() string {
	if c.opts.Mode == ModeSandbox {
		return ModeSandbox
	}
	return ModeDeployment
}

// checkPlan is the one plan check (bind.Check, through the session's
// bind.Checker): the plan recomputed from live host state must be the
// bound one, else a refusal (admission_not_active when the release is not
// actively admitted, plan_digest_mismatch otherwise); the operator is
// told which link changed.
func (ss *boundSession) checkPlan(ctx context.Context) (*resolve.Plan, error) {
	report, plan, err := ss.checker.Check(ctx, ss.now())
	if err != nil {
		return nil, err
	}
	if report.Approved {
		return plan, nil
	}
	if report.NotAdmitted() {
		fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: release %s is not actively admitted; run refused\n", ss.opts.Deployment, ss.binding.ArtifactDigest)
		return nil, append(blocking.List{}, report.Refusals...)
	}
	for _, ch := range report.Changes {
		fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: plan changed: %s %s %s\n", ss.opts.Deployment, ch.Link, ch.Capability, ch.Detail)
	}
	return nil, report.Err()
}

// readRelist bounds how old the tool list a step is checked against may
// be: a read re-lists the downstream tools when the server announced a
// change (tools/list_changed), when the last listing is older than this,
// or when none was made. An effect does the same only on a server that
// announces its changes (untilAnnounced); on any other it re-lists. A
// variable only so a test can widen it (SetRelistAge).
var readRelist = time.Second

// untilAnnounced is the maxAge of an effect's listing: the tool list is
// listed again before the call unless the server promised at the
// session's start to announce every change of its tools and can keep that
// promise for the session (connector.Session.AnnouncesToolChanges), in
// which case a listing no older than readRelist with no change announced
// since is the live list. Without it an effect on a Node server queued a
// whole tools/list (~1.4 ms of the server's single thread) before its call.
const untilAnnounced time.Duration = -1

// session returns the open downstream session of the entry's connection,
// opening it when needed, and checks its tool list against the plan: a
// list made now when maxAge is 0 (session start), one no older than
// maxAge with no change announced since (reads), or one by effect's rule
// (untilAnnounced). It waits for
// the probe of a session start made in the background first, so a step
// never starts a second server beside the probe's.
func (ss *boundSession) session(ctx context.Context, e resolve.Entry, maxAge time.Duration) (*connector.Session, error) {
	if err := ss.waitProbe(ctx); err != nil {
		return nil, err
	}
	return ss.probeSession(ctx, e, maxAge)
}

// probeSession is session without waiting for a probe: the probe's own.
func (ss *boundSession) probeSession(ctx context.Context, e resolve.Entry, maxAge time.Duration) (*connector.Session, error) {
	ss.mu.Lock()
	s := ss.sessions[e.ConnectionID]
	ss.mu.Unlock()
	if s == nil {
		rec, err := connection.Get(ctx, ss.host, e.ConnectionID)
		if err != nil {
			return nil, err
		}
		opened, err := connector.Open(ss.life, rec.Config, connection.StartOptions(ss.host.Home, rec.Name, connector.Options{Stderr: ss.opts.Operator, SandboxDir: sandbox.Dir(ss.opts.Home), OwnedTrees: ss.host.OwnedTrees(ss.secret)}))
		if err != nil {
			return nil, err
		}
		if err := ss.checkProtocol(e, rec, opened); err != nil {
			opened.Close()
			return nil, err
		}
		ss.mu.Lock()
		if s = ss.sessions[e.ConnectionID]; s == nil {
			s, ss.sessions[e.ConnectionID] = opened, opened
		} else {
			opened.Close()
		}
		ss.mu.Unlock()
	}
	if ss.opts.NoProbe {
		return s, nil
	}
	if maxAge == untilAnnounced {
		maxAge = 0
		if s.AnnouncesToolChanges() {
			maxAge = readRelist
		}
	}
	var inv *connector.Inventory
	var err error
	if maxAge > 0 {
		inv, err = s.Fresh(ctx, maxAge)
	} else {
		inv, err = s.Inventory(ctx)
	}
	return ss.checkInventory(e, s, inv, err)
}

// checkProtocol holds a remote session to the protocol version the
// connection's verified revision recorded: a server that now agrees to
// another version is drift, like a changed tool list.
func (ss *boundSession) checkProtocol(e resolve.Entry, rec *connection.Record, s *connector.Session) error {
	if !s.Remote() || rec.Verification == nil || s.Protocol() == rec.Verification.Protocol {
		return nil
	}
	fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: connection %s agreed to another MCP protocol version than verified revision %d\n", ss.opts.Deployment, e.ConnectionID, e.ConnectionRevision)
	return blocking.New(blocking.ConnectionInventoryChanged, "connection %s", e.ConnectionID)
}

// checkInventory holds a session's fresh tool list to the plan entry's
// verified inventory; a session whose listing failed is dropped.
func (ss *boundSession) checkInventory(e resolve.Entry, s *connector.Session, inv *connector.Inventory, err error) (*connector.Session, error) {
	if err != nil {
		ss.dropSession(e.ConnectionID, s)
		return nil, err
	}
	if inv.Digest != e.InventoryDigest {
		fmt.Fprintf(ss.opts.Operator, "oa coordinator: deployment %s: connection %s lists other tools than verified revision %d\n", ss.opts.Deployment, e.ConnectionID, e.ConnectionRevision)
		return nil, blocking.New(blocking.ConnectionInventoryChanged, "connection %s", e.ConnectionID)
	}
	return s, nil
}

// dropSession forgets (and ends) a session that failed, so the next call
// starts the server again.
func (ss *boundSession) dropSession(id string, s *connector.Session) {
	ss.mu.Lock()
	if ss.sessions[id] == s {
		delete(ss.sessions, id)
	}
	ss.mu.Unlock()
	s.Close()
}

// buildReadTools lists the plan's read-only, approval-free capabilities
// with their downstream schemas.
func (ss *boundSession) buildReadTools(ctx context.Context, plan *resolve.Plan) error {
	for _, e := range plan.Capabilities {
		if e.Risk != ir.ReadOnly || e.Approval != ir.ApprovalNotRequired {
			continue
		}
		rec, err := connection.Get(ctx, ss.host, e.ConnectionID)
		if err != nil {
			return err
		}
		tool, ok := rec.Verification.Inventory.Tool(e.RuntimeTool)
		if !ok {
			return blocking.New(blocking.ConnectionInventoryChanged, "connection %s", e.ConnectionID)
		}
		capability, _ := ss.art.Worker.Capability(e.CapabilityKey)
		ss.readTools = append(ss.readTools, ReadTool{Name: contract.ToolName(e.CapabilityKey), Capability: e.CapabilityKey, Description: capability.Description, InputSchema: tool.InputSchema, OutputSchema: tool.OutputSchema})
	}
	return nil
}

// ReadTools are the read-only capability tools served beside the
// coordinator's own.
func (ss *boundSession) ReadTools() []ReadTool { return ss.readTools }

// Workflows lists the package's jobs.
func (ss *boundSession) Workflows() []WorkflowCard {
	w := ss.art.Worker
	cards := make([]WorkflowCard, 0, len(w.Jobs))
	for _, j := range w.Jobs {
		card := WorkflowCard{Name: j.Name, Purpose: j.Purpose, DoneMeans: j.DoneMeans, InputSchema: j.InputSchema, Effects: []string{}, Approval: map[string]bool{}}
		for _, s := range j.Steps {
			if s.Kind != ir.StepEffect {
				continue
			}
			card.Effects = append(card.Effects, s.Capability)
			if e, ok := ss.binding.Plan.Entry(s.Capability); ok {
				card.Approval[s.Capability] = e.Approval == ir.ApprovalRequired
			}
		}
		cards = append(cards, card)
	}
	return cards
}

var (
	// errClosing is why the coordinator's life ends on Close.
	errClosing = errors.New("coordinator: closing")
	// errClientGone is why it ends when the MCP client went away.
	errClientGone = errors.New("coordinator: the client went away")
)

// ClientGone ends every run and downstream session this process is
// executing because the MCP client went away (its stdin reached end of
// file or the session closed): a run cut short by it is recorded as
// client_disconnected, not as a timeout. Close must still be called.
func (c *Coordinator) ClientGone() {
	c.engine.stopClaiming()
	c.cancel(errClientGone)
}

// clientGone reports whether the session ended because the client left.
func (en *env) clientGone() bool {
	return errors.Is(context.Cause(en.life), errClientGone)
}

// Close ends every run this process is executing (they read as
// interrupted) and every downstream session, then the host.
func (c *Coordinator) Close() error {
	c.engine.stopClaiming()
	if c.cancel != nil {
		c.cancel(errClosing)
	}
	c.engine.runs.Wait()
	_ = c.bound.waitProbe(context.Background()) // ended by the cancel above
	c.waitWitnessing()
	if c.eval != nil {
		c.eval.pool.Close()
	}
	c.bound.closeSessions()
	return c.host.Close()
}

// closeSessions ends every downstream session.
func (ss *boundSession) closeSessions() {
	ss.mu.Lock()
	for id, s := range ss.sessions {
		s.Close()
		delete(ss.sessions, id)
	}
	ss.mu.Unlock()
}
