package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/telemetry"
)

// stop ends execution of a run with a reason, or pauses it.
type stop struct {
	reason contract.Reason
	pause  bool
}

func (s *stop) Error() string { return string(s.reason) }

// execute runs the job's steps for one attempt. Reads and guards run
// again on every attempt and resume (what they saw may have changed while
// the run waited); an effect that completed is never sent again.
// ctx is the coordinator's life carrying the caller's trace context.
//
// A run waits for one of the process's slots (Options.MaxRuns) before its
// first step; a coordinator closing meanwhile ends it interrupted before
// any effect.
func (eng *engine) execute(ctx context.Context, r *runState, inputs []byte) (sealed *runState) {
	runID := r.RunID
	ctx, span := telemetry.StartRun(ctx, eng.opts.Deployment, runID)
	defer eng.endRun(span, runID)
	defer eng.desk.questions.forget(runID)
	defer eng.payOwed(runID)
	select {
	case eng.slots <- struct{}{}:
		defer func() { <-eng.slots }()
	case <-ctx.Done():
		return eng.finish(ctx, runID, eng.interruption)
	}
	span.Describe(r.Workflow, r.Attempt)
	err := eng.steps(ctx, r, inputs)
	var s *stop
	switch {
	case errors.As(err, &s) && s.pause, errors.Is(err, errNotContinued):
		return nil // waiting for a person (or decided meanwhile): nothing to finish
	case errors.Is(err, errRefusedAtIntake):
		return nil // refused at its intake: nothing of it was written
	case errors.As(err, &s) && s.reason == contract.ReasonReadFailed && ctx.Err() != nil:
		// A read cut short because this coordinator is closing failed
		// through no fault of the server: the run was interrupted.
		return eng.finish(ctx, runID, eng.interruption)
	case errors.As(err, &s):
		return eng.finish(ctx, runID, func(*runState) contract.Reason { return s.reason })
	case ctx.Err() != nil:
		return eng.finish(ctx, runID, eng.interruption)
	case err != nil:
		fmt.Fprintf(eng.opts.Operator, "oa coordinator: run %s: %v\n", runID, err)
		return eng.finish(ctx, runID, eng.interruption)
	default:
		return eng.finish(ctx, runID, eng.verdict)
	}
}

// read reads a run's state.
func (eng *engine) read(ctx context.Context, runID string) (*runState, error) {
	return readRun(ctx, eng.ledger, runID)
}

// verdict is a run's outcome once every step ran: done only when every
// piece of required evidence was read back, and said without a change
// for a job that has no effect step.
func (eng *engine) verdict(cur *runState) contract.Reason {
	job, _ := eng.bound.art.Worker.Job(cur.Workflow)
	for _, need := range job.RequiredEvidence {
		if !slices.Contains(cur.Evidence, need) {
			if skippedCheck(job, cur, need) {
				// Nothing was read back because a person skipped the
				// check: the same outcome rule, with copy that says so.
				if job.OutcomeRule.MissingEvidence == string(contract.OutcomeNeedsReview) {
					return contract.ReasonSkippedNeedsReview
				}
				return contract.ReasonSkippedNotConfirmed
			}
			if job.OutcomeRule.MissingEvidence == string(contract.OutcomeNeedsReview) {
				return contract.ReasonEvidenceReview
			}
			return contract.ReasonNotConfirmed
		}
	}
	if !slices.ContainsFunc(job.Steps, func(s ir.Step) bool { return s.Kind == ir.StepEffect }) {
		// Nothing in the job writes: what held was checked, not changed.
		return contract.ReasonCheckedNoChange
	}
	return contract.ReasonVerified
}

// skippedCheck reports whether the check producing evidence need was
// skipped in r.
func skippedCheck(job ir.Job, r *runState, need string) bool {
	for _, s := range job.Steps {
		if s.Kind == ir.StepCheck && s.Evidence == need && slices.Contains(r.Skipped, s.ID) {
			return true
		}
	}
	return false
}

// interruption is the reason of a run cut short before its steps ended.
func (eng *engine) interruption(cur *runState) contract.Reason {
	switch {
	case !cur.effectsStarted():
		return contract.ReasonInterruptedEarly
	case eng.clientGone():
		return contract.ReasonClientDisconnected
	}
	return contract.ReasonInterrupted
}

// steps runs every step of r's job in order.
func (eng *engine) steps(ctx context.Context, r *runState, inputs []byte) error {
	job, ok := eng.bound.art.Worker.Job(r.Workflow)
	if !ok {
		return &stop{reason: contract.ReasonUnknownWorkflow}
	}
	if err := eng.eval.checkInputs(job, inputs); err != nil {
		return &stop{reason: contract.ReasonInvalidInputs}
	}
	seen := &stepResults{m: map[string]json.RawMessage{}, ahead: eng.eval.argumentSources(job)}
	// failed picks the reason of a failure: nothing written yet, or not.
	failed := func(before contract.Reason) error {
		switch {
		case r.effectsStarted() && before == contract.ReasonEvaluationOverBudget:
			return &stop{reason: contract.ReasonCheckOverBudget}
		case r.effectsStarted():
			return &stop{reason: contract.ReasonNotConfirmed}
		}
		return &stop{reason: before}
	}
	// Every attempt starts with the plan check, whatever its first step.
	if reason, err := eng.planReason(ctx); err != nil || reason != "" {
		return orStop(err, reason)
	}
	held := map[string]bool{} // guards that held in this attempt
	for _, s := range job.Steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if skip, err := eng.skipStep(ctx, r, s, held, inputs, seen); skip || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		switch s.Kind {
		case ir.StepRead:
			res, reason, err := eng.readStep(ctx, r, s, inputs, seen)
			if err != nil {
				return err
			}
			if reason != "" {
				return failed(reason)
			}
			seen.set(s.ID, res)
		case ir.StepGuard:
			_, span := telemetry.StartStep(ctx, string(s.Kind), s.ID, "")
			ok, err := eng.eval.predicate(ctx, s.Predicate, inputs, seen, nil)
			span.End(guardCode(ok, err))
			if err != nil {
				return eng.evalFailed(ctx, err, failed)
			}
			if !ok {
				if r.effectsStarted() {
					return &stop{reason: contract.ReasonNotConfirmed}
				}
				if job.OutcomeRule.GuardFailed == string(contract.OutcomeNeedsReview) {
					return &stop{reason: contract.ReasonGuardReview}
				}
				return &stop{reason: contract.ReasonGuardFailed}
			}
			held[s.ID] = true
		case ir.StepEffect:
			if r.completed(s.ID) {
				continue
			}
			if err := eng.effectStep(ctx, r, s, inputs, seen); err != nil {
				return err
			}
		case ir.StepCheck:
			res, reason, err := eng.readStep(ctx, r, s, inputs, seen)
			if err != nil {
				return err
			}
			if reason != "" {
				return failed(reason)
			}
			ok, err := eng.eval.predicate(ctx, s.Predicate, inputs, seen, res)
			if err != nil {
				return eng.evalFailed(ctx, err, failed)
			}
			if ok && s.Evidence != "" {
				// Written with the run's next write: the verdict, sealed
				// with the receipt, is its only reader (engine.owe).
				eng.owe(r, evidenceRead(s.ID, s.Evidence, digestJSON(res)))
			}
		}
	}
	return nil
}

// skipStep passes over step s when a person chose to skip it, the
// package (the admitted IR, not the item) declares it skippable, the
// guard it names held in this very attempt — evaluated again with the
// caller's inputs after the decision, since the guard runs before the
// step on every attempt and a guard that fails stops the run first —
// and the step would send the very call the person decided on (a skip,
// like an approval, holds for that call only: otherwise the step goes on
// to approvalFor, which asks about the new call). A skipped step is
// recorded in the run (and so in its receipt); it yields no result and
// no evidence.
func (eng *engine) skipStep(ctx context.Context, r *runState, s ir.Step, held map[string]bool, inputs []byte, seen *stepResults) (bool, error) {
	if !r.skipAllowed(s.ID) || s.SkippableWhile == "" || !held[s.SkippableWhile] {
		return false, nil
	}
	if slices.Contains(r.Skipped, s.ID) {
		return true, nil
	}
	entry, ok := eng.bound.binding.Plan.Entry(s.Capability)
	if !ok {
		return false, nil
	}
	args, err := eng.eval.arguments(ctx, s.Arguments, inputs, seen)
	if err != nil {
		// Not skipped: the step evaluates its arguments again and stops
		// the run as that failure does.
		return false, nil
	}
	digest, err := attention.CallDigest(eng.secret, proposedCall(entry, args))
	if err != nil || !r.decidedFor(s.ID, digest) {
		return false, err
	}
	err = eng.update(ctx, r.RunID, func(cur *runState) error {
		if !slices.Contains(cur.Skipped, s.ID) {
			cur.Skipped = append(cur.Skipped, s.ID)
		}
		*r = *cur
		return nil
	})
	return err == nil, err
}

// readStep calls a read-only capability with the step's arguments, after
// the plan check (a read never reaches a downstream server under a plan
// no person approved) and, where the plan requires it, a person's
// approval of that very call. The error is for program faults and a
// pause only.
func (eng *engine) readStep(ctx context.Context, r *runState, s ir.Step, inputs []byte, seen *stepResults) (_ json.RawMessage, reason contract.Reason, err error) {
	ctx, span := telemetry.StartStep(ctx, string(s.Kind), s.ID, s.Capability)
	defer func() { span.End(stepCode(reason, err)) }()
	if reason, err := eng.planReason(ctx); err != nil || reason != "" {
		return nil, reason, err
	}
	args, err := eng.eval.arguments(ctx, s.Arguments, inputs, seen)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", err
		}
		return nil, evalReason(err), nil
	}
	if entry, ok := eng.bound.binding.Plan.Entry(s.Capability); ok {
		if err := eng.approvalFor(ctx, r, s, entry, args, seen); err != nil {
			return nil, "", err
		}
	}
	res, err := eng.bound.call(ctx, s.Capability, args)
	eng.tell(s.ID, err)
	switch {
	case errors.Is(err, errPlan):
		return nil, contract.ReasonPlanChanged, nil
	case blocking.Has(err, blocking.ConnectionInventoryChanged):
		return nil, contract.ReasonToolDrift, nil
	case blocking.Has(err, blocking.ConnectionSettingMissing):
		return nil, contract.ReasonAppSettingMissing, nil
	case err != nil && credentialsRefused(err):
		return nil, contract.ReasonAppCredentials, nil
	case err != nil:
		if appError(res) == sandbox.ErrOffline || blocking.Has(err, blocking.ConnectorStartFailed, blocking.RemoteStartFailed) || notSent(err) {
			return nil, contract.ReasonAppOffline, nil
		}
		return nil, contract.ReasonReadFailed, nil
	case res.IsError:
		switch appError(res) {
		case sandbox.ErrOffline:
			return nil, contract.ReasonAppOffline, nil
		case sandbox.ErrNotFound, sandbox.ErrClosed, sandbox.ErrInvalid:
			return nil, contract.ReasonTargetRefused, nil
		}
		return nil, contract.ReasonReadFailed, nil
	}
	return stepResult(s, res), "", nil
}

// planReason makes the plan check before anything reaches a downstream
// server: "" when the plan is the bound one, else not_admitted or
// plan_changed. The error is for program faults only.
func (eng *engine) planReason(ctx context.Context) (contract.Reason, error) {
	ctx, span := telemetry.StartPlanCheck(ctx, eng.bound.binding.PlanDigest)
	_, err := eng.bound.checkPlan(ctx)
	span.End(telemetry.Code(err))
	switch {
	case err == nil:
		return "", nil
	case blocking.Refusals(err) == nil:
		return "", err
	case blocking.Has(err, blocking.AdmissionNotActive):
		return contract.ReasonNotAdmitted, nil
	}
	return contract.ReasonPlanChanged, nil
}

// orStop is err, or else a stop with reason.
func orStop(err error, reason contract.Reason) error {
	if err != nil {
		return err
	}
	return &stop{reason: reason}
}

// effectStep makes one consequential call: only with the person's
// approval where it is required, only after the plan and the downstream
// tool list are checked again, and recorded as in flight before it is
// sent, so a crash mid-call reads as not_sure_if_saved.
func (eng *engine) effectStep(ctx context.Context, r *runState, s ir.Step, inputs []byte, seen *stepResults) (err error) {
	ctx, span := telemetry.StartStep(ctx, string(s.Kind), s.ID, s.Capability)
	defer func() { span.End(stopCode(err)) }()
	entry, ok := eng.bound.binding.Plan.Entry(s.Capability)
	if !ok {
		return &stop{reason: contract.ReasonPlanChanged}
	}
	evaluated := func(err error) error {
		if ctx.Err() != nil {
			return err
		}
		return &stop{reason: evalReason(err)}
	}
	// A step that needs a person's approval evaluates its arguments
	// first: the approval holds for the very call these arguments make,
	// and these same bytes are what is sent.
	var args json.RawMessage
	approval := entry.Approval == ir.ApprovalRequired
	if approval {
		if args, err = eng.eval.arguments(ctx, s.Arguments, inputs, seen); err != nil {
			return evaluated(err)
		}
		if err := eng.approvalFor(ctx, r, s, entry, args, seen); err != nil {
			return err
		}
	}
	if reason, err := eng.planReason(ctx); err != nil || reason != "" {
		return orStop(err, reason)
	}
	// The downstream tool list is listed and checked while the arguments
	// are evaluated and the in-flight mark is written: all three hold
	// before the call is sent, and none waits for another.
	listed := eng.bound.sessionAsync(ctx, entry)
	if !approval {
		if args, err = eng.eval.arguments(ctx, s.Arguments, inputs, seen); err != nil {
			<-listed
			return evaluated(err)
		}
	}
	if err := eng.update(ctx, r.RunID, func(cur *runState) error { cur.InFlight = s.ID; return nil }); err != nil {
		<-listed
		return err
	}
	r.InFlight = s.ID
	got := <-listed
	if got.err != nil {
		// Nothing was sent: the mark ends with the run's next write.
		eng.owe(r, neverSent(s.ID))
		return &stop{reason: sessionReason(got.err)}
	}
	session := got.session
	// The call's timeout stops while its app's question waits for a
	// person (effectquestion.go).
	call := eng.desk.newEffectCall(r, s, entry)
	callCtx, cancel := call.context(ctx)
	res, err := session.Call(callCtx, entry.RuntimeTool, args)
	cancel()
	reason := classifyEffect(res, err, session.Sandbox())
	if err != nil && (reason == contract.ReasonEffectTimeout || reason == contract.ReasonEffectUnclear) && eng.life.Err() != nil {
		// Cut short by the session ending, not by the timeout: the client
		// went away, or the coordinator is closing (a signal).
		reason = contract.ReasonInterrupted
		if eng.clientGone() {
			reason = contract.ReasonClientDisconnected
		}
	}
	eng.tell(s.ID, err)
	if err != nil {
		eng.bound.dropSession(entry.ConnectionID, session)
	}
	if id := call.unanswered(); id != "" {
		if !provenByApp(reason) {
			return eng.desk.questionUnanswered(r, s, id)
		}
		if err := eng.desk.questionLapsed(ctx, id); err != nil {
			return err
		}
	}
	digest := ""
	if reason == "" {
		digest = digestJSON(res.Structured)
	}
	answered := completedEffect(s.ID, digest, reason)
	if call.questioned() {
		// A person was asked during the call and may decide on the run:
		// record the answer now, even when the coordinator is closing.
		if err := eng.update(context.Background(), r.RunID, func(cur *runState) error {
			answered(cur)
			*r = *cur
			return nil
		}); err != nil {
			return err
		}
	} else {
		// The in-flight mark is durable: the answer rides on the run's
		// next write, its terminal one included (engine.owe).
		eng.owe(r, answered)
	}
	if reason != "" {
		return &stop{reason: reason}
	}
	return nil
}

// approvalFor pauses r at step s when the plan entry requires a person's
// approval for its capability and none was given for the very call the
// step would now send (args to the entry's connection and tool): an
// approval made on another call — a re-read changed the arguments, a
// retry — does not carry over, and a new item asks about this one.
func (eng *engine) approvalFor(ctx context.Context, r *runState, s ir.Step, entry resolve.Entry, args json.RawMessage, seen *stepResults) error {
	if entry.Approval != ir.ApprovalRequired {
		return nil
	}
	p := eng.proposal(r, s, entry, args, seen)
	digest, err := attention.CallDigest(eng.secret, p.Call)
	if err != nil {
		return err
	}
	if r.approved(s.ID) && r.decidedFor(s.ID, digest) {
		return nil
	}
	if err := eng.pauseAt(ctx, r, s, entry.Risk, p); err != nil {
		return err
	}
	return &stop{reason: contract.ReasonApprovalRequired, pause: true}
}

// proposedCall is the downstream call of args through plan entry e.
func proposedCall(e resolve.Entry, args json.RawMessage) attention.ProposedCall {
	return attention.ProposedCall{Connection: e.ConnectionID, Tool: e.RuntimeTool, Arguments: args}
}

// proposal is the change step s of r proposes: its call, what the
// attempt read before it, and the workflow's purpose and what done
// means. It goes only into the item, sealed.
func (eng *engine) proposal(r *runState, s ir.Step, e resolve.Entry, args json.RawMessage, seen *stepResults) attention.ProposedChange {
	job, _ := eng.bound.art.Worker.Job(r.Workflow)
	read := make(map[string]json.RawMessage, len(seen.m))
	maps.Copy(read, seen.m)
	return attention.ProposedChange{Workflow: r.Workflow, Purpose: job.Purpose, DoneMeans: job.DoneMeans, Step: s.ID,
		Capability: s.Capability, Risk: e.Risk, Call: proposedCall(e, args), Read: read}
}

// classifyEffect maps an effect call's answer to a reason ("" = success).
// An answer that does not prove nothing was written is never did_not_run;
// only the sandbox's closed error words (trusted: the session is the
// built-in sandbox) prove that. Any other server's error words prove
// nothing.
func classifyEffect(res *connector.CallResult, err error, trusted bool) contract.Reason {
	switch {
	case err != nil && blocking.Has(err, blocking.ConnectorArgumentsInvalid, blocking.ConnectorToolUnknown, blocking.ConnectorClosed):
		return contract.ReasonEvaluationFailed // refused before anything was sent
	case blocking.Has(err, blocking.ConnectionSettingMissing):
		return contract.ReasonAppSettingMissing // the server was not started
	case err != nil && notSent(err):
		return contract.ReasonAppOffline // nothing reached the server
	case err != nil && credentialsRefused(err):
		return contract.ReasonAppCredentials
	case err != nil && blocking.Has(err, blocking.ConnectorTimeout, blocking.RemoteTimeout, blocking.ConnectorCancelled):
		return contract.ReasonEffectTimeout
	case err != nil:
		return contract.ReasonEffectUnclear
	case !res.IsError:
		return ""
	case !trusted:
		return contract.ReasonEffectUnclear
	}
	switch appError(res) {
	case sandbox.ErrDuplicate:
		return contract.ReasonDuplicateRecord
	case sandbox.ErrOffline:
		return contract.ReasonAppOffline
	case sandbox.ErrClosed, sandbox.ErrNotFound, sandbox.ErrInvalid:
		return contract.ReasonTargetRefused
	}
	return contract.ReasonEffectUnclear
}

// notSent reports whether err proves the request never reached a remote
// server: it could not be reached, its certificate was not trusted, or the
// request was not written.
func notSent(err error) bool {
	return blocking.Has(err, blocking.RemoteUnreachable, blocking.RemoteTLSUntrusted, blocking.RemoteNotSent,
		blocking.RemoteCAInvalid, blocking.ConnectorSecretUnavailable, blocking.OAuthServerUnreachable)
}

// credentialsRefused reports whether a remote server refused the host's
// credentials (401, 403), the OAuth login is gone, or the authorization
// server's answers cannot be used (no metadata, an answer too large):
// nothing was done, and retrying does not help until a person acts.
func credentialsRefused(err error) bool {
	return blocking.Has(err, blocking.RemoteUnauthorized, blocking.RemoteForbidden, blocking.RemoteLoginRequired,
		blocking.OAuthTokenRejected, blocking.OAuthClientRefused, blocking.OAuthDiscoveryFailed, blocking.OAuthTokenStoreInvalid,
		blocking.OAuthAnswerTooLarge)
}

// sessionReason is the reason for a downstream session that could not be
// had before a step: drift, refused credentials, or offline.
func sessionReason(err error) contract.Reason {
	switch {
	case blocking.Has(err, blocking.ConnectionInventoryChanged):
		return contract.ReasonToolDrift
	case credentialsRefused(err):
		return contract.ReasonAppCredentials
	case blocking.Has(err, blocking.ConnectionSettingMissing):
		return contract.ReasonAppSettingMissing
	}
	return contract.ReasonAppOffline
}

// listedSession is what sessionAsync delivers: a session whose tool list
// was listed and checked, or why there is none.
type listedSession struct {
	session *connector.Session
	err     error
}

// sessionAsync gets the session of the plan entry's connection, its tool
// list checked as an effect needs it (untilAnnounced), in the background;
// the channel delivers it once.
func (ss *boundSession) sessionAsync(ctx context.Context, e resolve.Entry) <-chan listedSession {
	out := make(chan listedSession, 1)
	go func() {
		s, err := ss.session(ctx, e, untilAnnounced)
		out <- listedSession{s, err}
	}()
	return out
}

// neverSent is the change that ends effect step's in-flight mark when
// its call was never sent.
func neverSent(step string) func(*runState) {
	return func(cur *runState) {
		if cur.InFlight == step {
			cur.InFlight = ""
		}
	}
}

// reasonWroteNothing reports whether reason proves the effect wrote
// nothing, so the step is no longer in flight.
func reasonWroteNothing(reason contract.Reason) bool {
	info, _ := reason.Info()
	return info.RecordChanged == contract.ChangedNo
}

var errPlan = errors.New("coordinator: the plan has no entry for the capability")

// call calls a read-only capability of the plan.
func (ss *boundSession) call(ctx context.Context, capability string, args json.RawMessage) (*connector.CallResult, error) {
	entry, ok := ss.binding.Plan.Entry(capability)
	if !ok {
		return nil, errPlan
	}
	session, err := ss.session(ctx, entry, readRelist)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, ss.opts.EffectTimeout)
	defer cancel()
	res, err := session.Call(callCtx, entry.RuntimeTool, args)
	if err != nil {
		ss.dropSession(entry.ConnectionID, session)
	}
	return res, err
}

// appError is the app's closed error word in a tool error's structured
// content ({"error": "offline"}), or "".
func appError(res *connector.CallResult) string {
	if res == nil || len(res.Structured) == 0 {
		return ""
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(res.Structured, &e)
	return e.Error
}

// evalReason is the reason a failed evaluation stops its run with: over
// budget (never retried automatically: the same inputs would go over
// again), or failed.
func evalReason(err error) contract.Reason {
	if errors.Is(err, component.ErrOverBudget) {
		return contract.ReasonEvaluationOverBudget
	}
	return contract.ReasonEvaluationFailed
}

// evalFailed stops a run whose guard or check could not be evaluated,
// through failed (which knows whether an effect was sent); an evaluation
// cut short by the coordinator closing is the interruption it is.
func (eng *engine) evalFailed(ctx context.Context, err error, failed func(contract.Reason) error) error {
	if ctx.Err() != nil {
		return err
	}
	return failed(evalReason(err))
}

// argumentSources is the sources of job's arguments evaluators, in the
// order of its steps.
func (ev *evaluator) argumentSources(job ir.Job) []string {
	var out []string
	for _, s := range job.Steps {
		if e, ok := ev.artifact.Worker.Evaluator(s.Arguments); ok && s.Arguments != "" {
			out = append(out, e.Source)
		}
	}
	return out
}

func (ev *evaluator) arguments(ctx context.Context, evaluator string, inputs []byte, seen *stepResults) (json.RawMessage, error) {
	e, ok := ev.artifact.Worker.Evaluator(evaluator)
	if !ok {
		return nil, fmt.Errorf("no evaluator %s", evaluator)
	}
	return ev.pool.EvalAhead(ctx, e.Source, inputs, seen.encoded(), nil, seen.takeAhead())
}

func (ev *evaluator) predicate(ctx context.Context, evaluator string, inputs []byte, seen *stepResults, result json.RawMessage) (bool, error) {
	e, ok := ev.artifact.Worker.Evaluator(evaluator)
	if !ok {
		return false, fmt.Errorf("no evaluator %s", evaluator)
	}
	out, err := ev.pool.Eval(ctx, e.Source, inputs, seen.encoded(), result)
	if err != nil {
		return false, err
	}
	return string(out) == "true", nil
}

// stepResults are the results of the steps an attempt has read, and their
// JSON as evaluators see it (steps), encoded once per result added rather
// than once per evaluation.
type stepResults struct {
	m    map[string]json.RawMessage
	json json.RawMessage
	// ahead is the sources of the job's arguments evaluators, sent with
	// the attempt's first arguments evaluation to be evaluated ahead on
	// its worker (component.Pool.EvalAhead: those that read the inputs
	// alone), then nil.
	ahead []string
}

// takeAhead returns ahead once.
func (s *stepResults) takeAhead() []string {
	a := s.ahead
	s.ahead = nil
	return a
}

func (s *stepResults) set(id string, res json.RawMessage) {
	s.m[id] = res
	s.json = nil
}

func (s *stepResults) encoded() json.RawMessage {
	if s.json == nil {
		b, err := json.Marshal(s.m)
		if err != nil {
			panic("coordinator: step results are JSON: " + err.Error())
		}
		s.json = b
	}
	return s.json
}

// Read serves a read-only capability tool: through the plan (checked
// again first) to the connection it names.
func (eng *engine) Read(ctx context.Context, capability string, args json.RawMessage) (*ReadResult, error) {
	if !slices.ContainsFunc(eng.bound.readTools, func(t ReadTool) bool { return t.Capability == capability }) {
		return nil, blocking.New(blocking.ConnectorToolUnknown, "no read-only capability tool by that name")
	}
	out := &ReadResult{Capability: capability}
	set := func(reason contract.Reason) (*ReadResult, error) {
		info, _ := reason.Info()
		out.Outcome, out.Reason = info.Outcome, reason
		return out, nil
	}
	if reason, err := eng.planReason(ctx); err != nil {
		return nil, err
	} else if reason != "" {
		return set(reason)
	}
	res, err := eng.bound.call(ctx, capability, orEmpty(args))
	switch {
	case blocking.Has(err, blocking.ConnectionInventoryChanged):
		return set(contract.ReasonToolDrift)
	case blocking.Has(err, blocking.ConnectorArgumentsInvalid):
		return set(contract.ReasonInvalidInputs)
	case blocking.Has(err, blocking.ConnectionSettingMissing):
		return set(contract.ReasonAppSettingMissing)
	case err != nil && credentialsRefused(err):
		return set(contract.ReasonAppCredentials)
	case err != nil && notSent(err):
		return set(contract.ReasonAppOffline)
	case err != nil:
		return set(contract.ReasonReadFailed)
	case res.IsError && appError(res) == sandbox.ErrOffline:
		return set(contract.ReasonAppOffline)
	case res.IsError:
		return set(contract.ReasonTargetRefused)
	}
	out.Content = res.Structured
	out.ServerContent, out.ContentCut = res.Content, res.ContentCut
	return set(contract.ReasonRead)
}

// tell gives the operator the blocking codes of a failed step (codes and
// step ids only: the calling agent never sees this).
func (eng *engine) tell(step string, err error) {
	if err == nil {
		return
	}
	codes := ""
	for _, r := range blocking.Refusals(err) {
		codes += " " + string(r.Code)
	}
	if codes == "" {
		codes = " " + err.Error()
	}
	fmt.Fprintf(eng.opts.Operator, "oa coordinator: deployment %s: step %s failed:%s\n", eng.opts.Deployment, step, codes)
}
