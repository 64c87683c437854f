package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/telemetry"
)

// MaxAttempts is how many times one request may be attempted; only
// results that prove nothing was written allow another attempt.
const MaxAttempts = 5

// Run runs (or replays) the workflow for one request. The same request_id
// replays the result; with other inputs it is refused; a result that is
// safe to retry starts a new attempt; a paused run a person approved
// resumes from where it waited. It waits up to req.Wait for a terminal
// outcome. The error is for program faults only: every refusal is a
// Result with a closed reason.
func (eng *engine) Run(ctx context.Context, req RunRequest) (*Result, error) {
	if !contract.ValidID(req.RequestID) {
		return nil, blocking.New(blocking.RequestIDInvalid, "request_id breaks the rule")
	}
	inputs, err := canonical.Transform(orEmpty(req.Inputs))
	if err != nil {
		inputs = nil // not JSON: refused below as invalid inputs
	}
	fp := fingerprint(eng.secret, []byte(eng.opts.Deployment), []byte(req.Workflow), inputs)
	row, err := eng.ledger.Tables().RunByRequest(ctx, eng.opts.Deployment, req.RequestID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		res, err := eng.start(ctx, req, inputs, fp)
		if !errors.Is(err, errRequestTaken) {
			return res, err
		}
		// Another caller started this request first: its run is the
		// request's, attached to like any run found at the start.
		if row, err = eng.ledger.Tables().RunByRequest(ctx, eng.opts.Deployment, req.RequestID); err != nil {
			return nil, err
		}
		if row == nil {
			return nil, fmt.Errorf("coordinator: request %s: taken by another caller, but its run is not stored", req.RequestID)
		}
	}
	return eng.attach(ctx, req, inputs, fp, row)
}

// attach answers a request that has a run already: refused when the
// inputs differ or its row was tampered with; else the run is continued
// (resumed after a person's decision, or retried), or replayed.
func (eng *engine) attach(ctx context.Context, req RunRequest, inputs []byte, fp string, row *ledger.RunRow) (*Result, error) {
	r, refused, err := eng.verifiedRun(ctx, row)
	if err != nil || refused != nil {
		return refused, err
	}
	if r.Fingerprint != fp {
		res := newResult(contract.ReasonRequestIDConflict)
		res.RequestID, res.Workflow, res.Proof = req.RequestID, r.Workflow, contract.ProofNone
		return &res, nil
	}
	if r, err = eng.settle(ctx, r); err != nil {
		return nil, err
	}
	switch {
	case r.Status == statePaused && r.decidedAt():
		return eng.continueRun(ctx, r, inputs, req.Wait, false)
	case r.Status == stateTerminal && r.SafeToRetry() && r.Attempt < MaxAttempts:
		return eng.continueRun(ctx, r, inputs, req.Wait, true)
	case r.Status == stateTerminal && r.SafeToRetry():
		res := newResult(contract.ReasonAttemptsExhausted)
		res.RunID, res.RequestID, res.Workflow, res.Attempt, res.Replayed = r.RunID, r.RequestID, r.Workflow, r.Attempt, true
		return &res, nil
	}
	return eng.replay(ctx, r.RunID, req.Wait)
}

// replay answers a request already made: its run's result, waited for
// while this process runs it.
func (eng *engine) replay(ctx context.Context, runID string, wait time.Duration) (*Result, error) {
	res, err := eng.wait(ctx, runID, wait, nil)
	if res != nil {
		res.Replayed = true
	}
	return res, err
}

// SafeToRetry reports whether the run's result allows a new attempt.
func (r *runState) SafeToRetry() bool {
	info, _ := r.Reason.Info()
	return info.SafeToRetry
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	return b
}

// start records a new run and executes it; errRequestTaken when another
// caller stored a run for the request first (Run then attaches to it).
func (eng *engine) start(ctx context.Context, req RunRequest, inputs []byte, fp string) (*Result, error) {
	now := eng.now().UTC()
	// A name the package does not define is the caller's text: it is
	// neither stored nor signed into a receipt, only fingerprinted.
	workflow := req.Workflow
	if _, ok := eng.bound.art.Worker.Job(workflow); !ok {
		workflow = ""
	}
	r := &runState{RunID: newID("run"), Deployment: eng.opts.Deployment, RequestID: req.RequestID, Workflow: workflow, Fingerprint: fp,
		Attempt: 1, Completed: []string{}, Approved: []string{},
		Evidence: []string{}, Digests: map[string]string{}, PlanDigest: eng.bound.binding.PlanDigest, Binding: eng.bound.bindingDigest, CreatedAt: now, UpdatedAt: now,
		RecordRefs: ledger.RecordRefsOf(eng.secret, inputs)}
	if err := r.start(eng.me); err != nil {
		return nil, err
	}
	b, err := r.encode(eng.secret)
	if err != nil {
		return nil, err
	}
	// Claim the run before it exists, so that no reader in this process
	// ever sees it running without this process executing it.
	done, err := eng.claim(r.RunID)
	if err != nil {
		return nil, err
	}
	// The run is taken in — the store checked, its row written — while
	// its first steps already run: none of them writes or makes an effect
	// before the intake is done (intake.go).
	row := ledger.RunRow{RunID: r.RunID, Deployment: r.Deployment, RequestID: r.RequestID, State: b}
	runID := r.RunID // r is the executing goroutine's from here on
	in := eng.intakes.begin(runID)
	sealed, cancel := eng.goExecute(ctx, r, inputs, done)
	if eng.holdIntake != nil {
		eng.holdIntake() // a test's: the run's first steps go ahead
	}
	refused, err := eng.guard.beforeNewRun(ctx, req.RequestID)
	if err == nil && refused == nil {
		err = eng.ledger.Tables().InsertRun(ctx, row)
	}
	if refused != nil || err != nil {
		cancel() // its reads stop, and its writes are refused
		eng.intakes.end(runID, in, true)
		<-done // its execution ended, having written nothing
		eng.intakes.forget(runID)
		if errors.Is(err, store.ErrConflict) {
			return nil, errRequestTaken // another caller started this request first
		}
		return refused, err
	}
	eng.intakes.end(runID, in, false)
	return eng.wait(ctx, runID, req.Wait, sealed)
}

// continueRun takes an existing run into a new attempt (retry) or on from
// an approval (resume). Whether it may is decided again inside the write
// that claims it, so two callers never both continue one run.
func (eng *engine) continueRun(ctx context.Context, r *runState, inputs []byte, wait time.Duration, retry bool) (*Result, error) {
	if refused, err := eng.guard.beforeAttempt(ctx, r.RunID, r.RequestID, r.Workflow, r.Attempt); err != nil || refused != nil {
		return refused, err
	}
	done, err := eng.claim(r.RunID)
	if errors.Is(err, errNotContinued) {
		return eng.replay(ctx, r.RunID, wait) // this process is continuing it already
	}
	if err != nil {
		return nil, err
	}
	var continued *runState
	err = eng.update(ctx, r.RunID, func(cur *runState) error {
		continued = cur
		var err error
		switch {
		case retry && cur.Attempt != r.Attempt:
			return errNotContinued // another caller retried it first
		case retry:
			err = cur.retry(eng.me)
		case !cur.decidedAt():
			return errNotContinued
		default:
			err = cur.resume(eng.me)
		}
		if err != nil {
			return err
		}
		if cur.PlanDigest != eng.bound.binding.PlanDigest {
			// Approvals were given for another plan: ask again under this one.
			cur.Approved, cur.SkipAllowed, cur.DecidedCalls, cur.PlanDigest, cur.Binding = []string{}, nil, nil, eng.bound.binding.PlanDigest, eng.bound.bindingDigest
		}
		return nil
	})
	if err != nil {
		eng.release(r.RunID, done)
		if errors.Is(err, errNotContinued) {
			return eng.replay(ctx, r.RunID, wait)
		}
		return nil, err
	}
	return eng.launch(ctx, continued, inputs, wait, done)
}

var (
	errNotContinued = errors.New("coordinator: the run was continued or decided by another caller")
	errClosed       = errors.New("coordinator: closed")
	// errRequestTaken is a new run's start that found its request_id
	// stored by another caller first.
	errRequestTaken = errors.New("coordinator: the request was started by another caller")
)

// claim marks a run as executed by this process.
func (eng *engine) claim(runID string) (chan struct{}, error) {
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.closed {
		return nil, errClosed
	}
	if eng.active[runID] != nil {
		return nil, errNotContinued
	}
	done := make(chan struct{})
	eng.active[runID] = done
	eng.runs.Add(1)
	return done, nil
}

// release undoes a claim whose run was not executed.
func (eng *engine) release(runID string, done chan struct{}) {
	eng.mu.Lock()
	delete(eng.active, runID)
	eng.mu.Unlock()
	close(done)
	eng.runs.Done()
}

func (eng *engine) isActive(runID string) bool {
	eng.mu.Lock()
	defer eng.mu.Unlock()
	return eng.active[runID] != nil
}

// launch executes a claimed run in the background and waits for it up to
// wait. r is the run as this process just wrote it: claimed, no one else
// moves it, so it is not read back.
func (eng *engine) launch(ctx context.Context, r *runState, inputs []byte, wait time.Duration, done chan struct{}) (*Result, error) {
	runID := r.RunID // r is the executing goroutine's from here on
	sealed, _ := eng.goExecute(ctx, r, inputs, done)
	return eng.wait(ctx, runID, wait, sealed)
}

// goExecute executes claimed run r in the background, on a context of the
// coordinator's life that cancel ends early, and releases its claim
// (closing done) when it ends. sealed is the state its execution sealed,
// or nil: read it once done is closed.
func (eng *engine) goExecute(ctx context.Context, r *runState, inputs []byte, done chan struct{}) (sealed func() *runState, cancel context.CancelFunc) {
	runCtx, cancel := context.WithCancel(telemetry.Detach(eng.life, ctx))
	runID := r.RunID
	var end *runState
	go func() {
		defer eng.release(runID, done)
		defer cancel()
		end = eng.execute(runCtx, r, inputs)
	}()
	return func() *runState { return end }, cancel
}

// wait waits up to d for the run to stop, then reads it. A run this
// process executes is waited for on its channel; a run another process
// executes (another coordinator on the same OA_HOME) is read from the
// store again with backoff until it stops, its owner is gone, or d ends.
//
// sealed, when not nil, is the run's execution's own account of how it
// ended (set before its done channel closes): the state it sealed, which
// is answered as it is rather than read back, or nil.
func (eng *engine) wait(ctx context.Context, runID string, d time.Duration, sealed func() *runState) (*Result, error) {
	if d <= 0 {
		return eng.GetRun(ctx, runID, 0)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	delay := pollFirst
	for {
		eng.mu.Lock()
		done := eng.active[runID]
		eng.mu.Unlock()
		if done != nil {
			select {
			case <-done:
				if r := ownSealed(sealed); r != nil {
					return r.result(), nil
				}
			case <-eng.desk.questions.signal(runID): // paused on an app's question
			case <-t.C:
			case <-ctx.Done():
			}
			return eng.GetRun(ctx, runID, 0)
		}
		res, err := eng.GetRun(ctx, runID, 0)
		if err != nil || res.Outcome != contract.OutcomeRunning {
			return res, err
		}
		if eng.isActive(runID) {
			continue // claimed here meanwhile: wait on its channel
		}
		poll := time.NewTimer(delay)
		select {
		case <-poll.C:
		case <-t.C:
			poll.Stop()
			return eng.GetRun(ctx, runID, 0)
		case <-ctx.Done():
			poll.Stop()
			return eng.GetRun(ctx, runID, 0)
		}
		delay = min(2*delay, pollMax)
	}
}

// How often a run another process executes is read again: from pollFirst,
// doubling, to at most pollMax.
const (
	pollFirst = 5 * time.Millisecond
	pollMax   = 250 * time.Millisecond
)

// GetRun reads a run's result, waiting up to wait while it runs here.
func (eng *engine) GetRun(ctx context.Context, runID string, wait time.Duration) (*Result, error) {
	if wait > 0 {
		return eng.wait(ctx, runID, wait, nil)
	}
	row, err := eng.ledger.Tables().RunByID(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil || row.Deployment != eng.opts.Deployment {
		return nil, blocking.New(blocking.RunUnknown, "no such run on this deployment")
	}
	r, refused, err := eng.verifiedRun(ctx, row)
	if err != nil || refused != nil {
		return refused, err
	}
	if r, err = eng.settle(ctx, r); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// ownSealed is what sealed gives, or nil when there is none.
func ownSealed(sealed func() *runState) *runState {
	if sealed == nil {
		return nil
	}
	return sealed()
}

// settle ends a run left running by no one — its process is gone, or it
// is this process and nothing here executes it — as interrupted, and
// not_sure_if_saved unless provably no effect was sent; and seals a
// terminal run whose receipt was never written.
func (eng *engine) settle(ctx context.Context, r *runState) (*runState, error) {
	r, err := eng.desk.settleQuestion(ctx, r)
	if err != nil {
		return nil, err
	}
	orphan := func(cur *runState) bool {
		return cur.Status == stateRunning && (!alive(cur.Owner) || (cur.Owner == eng.me && !eng.isActive(cur.RunID)))
	}
	if orphan(r) {
		err := eng.update(ctx, r.RunID, func(cur *runState) error {
			if orphan(cur) {
				reason := contract.ReasonInterruptedEarly
				if cur.effectsStarted() {
					reason = contract.ReasonInterrupted
				}
				_ = cur.finish(reason) // running: orphan held
			}
			r = cur
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if r.Status == stateTerminal && r.Receipt == "" {
		sealed, err := sealRun(ctx, eng.ledger, r.RunID, eng.now())
		if err != nil {
			return nil, err
		}
		r = sealed
	}
	return r, nil
}

// update moves a run in one write transaction, through the run writer:
// what the run owes applied first, then f, the time stamped.
func (eng *engine) update(ctx context.Context, runID string, f func(*runState) error) error {
	return eng.writer.Update(ctx, runID, f)
}

// runStates is how the engine's run writer (ledger.RunWriter) handles a
// runState: coded with the host's secret, stamped with the engine's
// clock, and a new run's writes held until its intake is done
// (intake.go).
func (eng *engine) runStates() ledger.RunStates[runState] {
	return ledger.RunStates[runState]{
		Decode:   func(b []byte) (*runState, error) { return decodeRun(eng.secret, b) },
		Encode:   func(r *runState) ([]byte, error) { return r.encode(eng.secret) },
		OfRecord: func(r *ledger.RunRecord) *runState { return (*runState)(r) },
		Stamp:    func(r *runState) { r.UpdatedAt = eng.now().UTC() },
		Ready:    eng.intakes.wait,
	}
}

// owe applies change to r, the run as this process executes it, and owes
// it to the run's next write (ledger.RunWriter): only a change no outcome
// depends on before that write may be owed — an effect's completion,
// whose in-flight mark was made durable before the call, so a crash
// before the next write reads as an effect that may have been made
// (not_sure_if_saved), never as one not sent; a check's evidence, which
// only the verdict reads, written with the receipt.
func (eng *engine) owe(r *runState, change func(*runState)) {
	change(r)
	eng.writer.Owe(r.RunID, change)
}

// payOwed writes what run runID still owes when its execution ends
// without a write that carried it (in practice none does: every ending
// writes the run). A run no longer executing here (ended by another
// caller) is left as it is.
func (eng *engine) payOwed(runID string) {
	err := eng.writer.Pay(context.Background(), runID, func(cur *runState) error {
		if cur.Status == stateTerminal || cur.Owner != eng.me {
			return errNotContinued
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(eng.opts.Operator, "oa coordinator: run %s: the changes it made last were not written: %v\n", runID, err)
	}
}

// checkInputs validates inputs against the job's input schema, resolved
// once per job for the session.
func (ev *evaluator) checkInputs(job ir.Job, inputs []byte) error {
	if inputs == nil {
		return errors.New("inputs are not JSON")
	}
	resolved, err := ev.inputSchema(job)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(inputs, &v); err != nil {
		return err
	}
	return resolved.Validate(v)
}

// inputSchema is job's input schema resolved, remembered by job name
// (a session's artifact, and so its jobs, never change).
func (ev *evaluator) inputSchema(job ir.Job) (*jsonschema.Resolved, error) {
	if known, ok := ev.inputSchemas.Load(job.Name); ok {
		return known.(*jsonschema.Resolved), nil
	}
	b, err := json.Marshal(job.InputSchema)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	ev.inputSchemas.Store(job.Name, resolved)
	return resolved, nil
}

func newID(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("coordinator: no randomness: " + err.Error())
	}
	return prefix + "_" + hex.EncodeToString(b)
}
