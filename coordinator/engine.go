package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/canonical"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/store"
)

// MaxAttempts is how many times one request may be attempted; only
// results that prove nothing was written allow another attempt.
const MaxAttempts = 5

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Run runs (or replays) the workflow for one request. The same request_id
// replays the result; with other inputs it is refused; a result that is
// safe to retry starts a new attempt; a paused run a person approved
// resumes from its next step. It waits up to req.Wait for a terminal
// outcome. The error is for program faults only: every refusal is a
// Result with a closed reason.
func (c *Coordinator) Run(ctx context.Context, req RunRequest) (*Result, error) {
	if !requestIDPattern.MatchString(req.RequestID) {
		return nil, blocking.New(blocking.RequestIDInvalid, "request_id breaks the rule")
	}
	inputs, err := canonical.Transform(orEmpty(req.Inputs))
	if err != nil {
		inputs = nil // not JSON: refused below as invalid inputs
	}
	fp := fingerprint(c.secret, []byte(c.opts.Deployment), []byte(req.Workflow), inputs)
	db := c.host.DB()
	row, err := db.RunByRequest(ctx, c.opts.Deployment, req.RequestID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return c.start(ctx, req, inputs, fp)
	}
	r, err := decodeRun(row.State)
	if err != nil {
		return nil, err
	}
	if r.Fingerprint != fp {
		res := newResult(ReasonRequestIDConflict)
		res.RequestID, res.Workflow, res.Proof = req.RequestID, r.Workflow, ProofNone
		return &res, nil
	}
	r, err = c.settle(ctx, r)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Status == stateRunning:
		return c.wait(ctx, r.RunID, req.Wait)
	case r.Status == statePaused && r.approved(c.pendingStep(r)):
		return c.continueRun(ctx, r, inputs, req.Wait, false)
	case r.Status == stateTerminal && r.SafeToRetry():
		if r.Attempt >= MaxAttempts {
			res := newResult(ReasonAttemptsExhausted)
			res.RunID, res.RequestID, res.Workflow, res.Attempt, res.Replayed = r.RunID, r.RequestID, r.Workflow, r.Attempt, true
			return &res, nil
		}
		return c.continueRun(ctx, r, inputs, req.Wait, true)
	}
	res := r.result()
	res.Replayed = true
	return res, nil
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

// start records a new run and executes it.
func (c *Coordinator) start(ctx context.Context, req RunRequest, inputs []byte, fp string) (*Result, error) {
	now := c.now().UTC()
	// A name the package does not define is the caller's text: it is
	// neither stored nor signed into a receipt, only fingerprinted.
	workflow := req.Workflow
	if _, ok := c.art.Worker.Job(workflow); !ok {
		workflow = ""
	}
	r := &runState{RunID: newID("run"), Deployment: c.opts.Deployment, RequestID: req.RequestID, Workflow: workflow, Fingerprint: fp,
		Attempt: 1, Status: stateRunning, Outcome: harness.OutcomeRunning, Reason: ReasonInProgress, Completed: []string{}, Approved: []string{},
		Evidence: []string{}, Digests: map[string]string{}, PlanDigest: c.binding.PlanDigest, Binding: c.bindingDigest, Owner: c.me, CreatedAt: now, UpdatedAt: now}
	b, err := r.encode()
	if err != nil {
		return nil, err
	}
	if err := c.host.DB().InsertRun(ctx, store.Run{RunID: r.RunID, Deployment: r.Deployment, RequestID: r.RequestID, State: b}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return c.Run(ctx, req) // another caller started this request first
		}
		return nil, err
	}
	return c.launch(ctx, r, inputs, req.Wait)
}

// continueRun takes an existing run into a new attempt (retry) or on from
// an approval (resume), owned by this process.
func (c *Coordinator) continueRun(ctx context.Context, r *runState, inputs []byte, wait time.Duration, retry bool) (*Result, error) {
	err := c.update(ctx, r.RunID, func(cur *runState) error {
		if cur.Status == stateRunning {
			return errAlreadyRunning
		}
		if retry {
			cur.Attempt++
			cur.Evidence, cur.Digests, cur.InFlight = []string{}, map[string]string{}, ""
		}
		cur.Status, cur.Outcome, cur.Reason, cur.Owner, cur.Receipt = stateRunning, harness.OutcomeRunning, ReasonInProgress, c.me, ""
		*r = *cur
		return nil
	})
	if errors.Is(err, errAlreadyRunning) {
		return c.wait(ctx, r.RunID, wait)
	}
	if err != nil {
		return nil, err
	}
	return c.launch(ctx, r, inputs, wait)
}

var errAlreadyRunning = errors.New("coordinator: the run is already running")

// launch executes r in the background and waits for it up to wait.
func (c *Coordinator) launch(ctx context.Context, r *runState, inputs []byte, wait time.Duration) (*Result, error) {
	done := make(chan struct{})
	c.mu.Lock()
	c.active[r.RunID] = done
	c.mu.Unlock()
	c.runs.Add(1)
	go func() {
		defer c.runs.Done()
		defer func() {
			c.mu.Lock()
			delete(c.active, r.RunID)
			c.mu.Unlock()
			close(done)
		}()
		c.execute(r.RunID, inputs)
	}()
	return c.wait(ctx, r.RunID, wait)
}

// wait waits up to d for the run to stop, then reads it.
func (c *Coordinator) wait(ctx context.Context, runID string, d time.Duration) (*Result, error) {
	c.mu.Lock()
	done := c.active[runID]
	c.mu.Unlock()
	if done != nil && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return c.GetRun(ctx, runID, 0)
}

// GetRun reads a run's result, waiting up to wait while it runs here.
func (c *Coordinator) GetRun(ctx context.Context, runID string, wait time.Duration) (*Result, error) {
	if wait > 0 {
		return c.wait(ctx, runID, wait)
	}
	row, err := c.host.DB().RunByID(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil || row.Deployment != c.opts.Deployment {
		return nil, blocking.New(blocking.RunUnknown, "no such run on this deployment")
	}
	r, err := decodeRun(row.State)
	if err != nil {
		return nil, err
	}
	if r, err = c.settle(ctx, r); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// settle ends a run left running by a process that is gone: interrupted,
// and not_sure_if_saved unless provably no effect was sent.
func (c *Coordinator) settle(ctx context.Context, r *runState) (*runState, error) {
	if r.Status != stateRunning || r.Owner.alive() {
		return r, nil
	}
	var out *runState
	err := c.update(ctx, r.RunID, func(cur *runState) error {
		if cur.Status == stateRunning && !cur.Owner.alive() {
			reason := ReasonInterruptedEarly
			if cur.effectsStarted() {
				reason = ReasonInterrupted
			}
			c.terminal(cur, reason)
		}
		out = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.Status == stateTerminal && out.Receipt == "" {
		if err := c.seal(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// update moves a run in one write transaction.
func (c *Coordinator) update(ctx context.Context, runID string, f func(*runState) error) error {
	return c.host.DB().UpdateRun(ctx, runID, func(b []byte) ([]byte, error) {
		r, err := decodeRun(b)
		if err != nil {
			return nil, err
		}
		if err := f(r); err != nil {
			return nil, err
		}
		r.UpdatedAt = c.now().UTC()
		return r.encode()
	})
}

// terminal sets r's terminal outcome from reason.
func (c *Coordinator) terminal(r *runState, reason Reason) {
	info, _ := reason.Info()
	// The in-flight mark ends here: its uncertainty is now in the outcome.
	r.Status, r.Outcome, r.Reason, r.InFlight = stateTerminal, info.Outcome, reason, ""
}

// pendingStep is the first effect step of r's job not yet completed.
func (c *Coordinator) pendingStep(r *runState) string {
	job, ok := c.art.Worker.Job(r.Workflow)
	if !ok {
		return ""
	}
	for _, s := range job.Steps {
		if s.Kind == ir.StepEffect && !r.completed(s.ID) {
			return s.ID
		}
	}
	return ""
}

// checkInputs validates inputs against the job's input schema.
func checkInputs(job ir.Job, inputs []byte) error {
	if inputs == nil {
		return errors.New("inputs are not JSON")
	}
	b, err := json.Marshal(job.InputSchema)
	if err != nil {
		return err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(inputs, &v); err != nil {
		return err
	}
	return resolved.Validate(v)
}

func newID(prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("coordinator: no randomness: " + err.Error())
	}
	return prefix + "_" + hex.EncodeToString(b)
}
