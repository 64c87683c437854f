package coordinator

import (
	"errors"

	"github.com/oa-dev/oa/contract"
)

// A run's state machine. A run's Status, Outcome and Reason are written
// by these transitions only, so that what a run may become from where it
// is lives in one place (TestRunTransitions holds it to the contract's
// reason and outcome tables):
//
//	(new) ──start──▶ running ──pause──▶ paused ──resume──▶ running
//	                    │                 │ ▲
//	                    │                 │ └─rewait (a person decided, the
//	                    │                 │   run still waits: approved,
//	                    │                 │   escalated, skip, unanswered)
//	                    └─────finish──────┴──────▶ terminal ──retry──▶ running
//
// A transition refused from where the run is changes nothing and is
// errNotContinued: another caller moved the run first. The Outcome of
// every state is the one the reason table gives its Reason.

// errBadTransition is a transition refused from the run's status: the
// run was moved by another caller (errNotContinued), or never could be.
var errBadTransition = errNotContinued

// start makes a new run running, owned by owner. Only a run that was
// never stored (no status yet) starts.
func (r *runState) start(owner owner) error {
	if r.Status != "" {
		return errBadTransition
	}
	r.toRunning(owner)
	return nil
}

// resume takes a paused run back to running, owned by owner: the caller
// came back after a person's approval or skip, or the app's question was
// answered or lapsed while its effect's call still waits here.
func (r *runState) resume(owner owner) error {
	if r.Status != statePaused {
		return errBadTransition
	}
	r.toRunning(owner)
	return nil
}

// retry takes a terminal run whose result allows it into its next
// attempt, owned by owner, with the evidence and digests of the attempt
// before forgotten.
func (r *runState) retry(owner owner) error {
	if r.Status != stateTerminal || !r.SafeToRetry() || r.Attempt >= MaxAttempts {
		return errBadTransition
	}
	r.Attempt++
	r.Evidence, r.Digests, r.InFlight, r.Skipped = []string{}, map[string]string{}, "", nil
	r.toRunning(owner)
	return nil
}

// toRunning is the one "running" every start, resume and retry makes:
// owned by owner, no receipt yet, waiting at no step.
func (r *runState) toRunning(owner owner) {
	r.Status, r.Outcome, r.Reason = stateRunning, contract.OutcomeRunning, contract.ReasonInProgress
	r.Owner, r.Receipt, r.PausedAt = owner, "", ""
}

// pause stops a running run at step for a person, waiting on attention
// item attentionID, with reason (a needs_review reason).
func (r *runState) pause(reason contract.Reason, step, attentionID string) error {
	if r.Status != stateRunning {
		return errBadTransition
	}
	r.Status, r.Outcome, r.Reason = statePaused, outcomeOf(reason), reason
	r.PausedAt, r.AttentionID = step, attentionID
	return nil
}

// rewait records why a paused run still waits, after a person's decision
// that does not end it (approved or skipped, awaiting the caller;
// escalated) or a question no one can answer any more.
func (r *runState) rewait(reason contract.Reason) error {
	if r.Status != statePaused {
		return errBadTransition
	}
	r.Outcome, r.Reason = outcomeOf(reason), reason
	return nil
}

// finish makes a running or paused run terminal with reason. The
// in-flight mark ends here (its uncertainty is now in the outcome), and
// the run waits at no step.
func (r *runState) finish(reason contract.Reason) error {
	if r.Status != stateRunning && r.Status != statePaused {
		return errBadTransition
	}
	r.Status, r.Outcome, r.Reason, r.InFlight, r.PausedAt = stateTerminal, outcomeOf(reason), reason, "", ""
	return nil
}

// outcomeOf is the outcome the reason table gives reason.
func outcomeOf(reason contract.Reason) contract.Outcome {
	info, _ := reason.Info()
	return info.Outcome
}

// isBadTransition reports whether err is a refused transition.
func isBadTransition(err error) bool { return errors.Is(err, errBadTransition) }
