package coordinator

import (
	"reflect"
	"slices"
	"testing"

	"github.com/oa-dev/oa/contract"
)

// waitReasons are the reasons a paused run reads: the pauses' (pause)
// and the decisions' that leave it waiting (rewait).
var waitReasons = []contract.Reason{
	contract.ReasonApprovalRequired, contract.ReasonApprovalAfterChange,
	contract.ReasonDownstreamQuestion, contract.ReasonDownstreamQuestionUnanswered,
	contract.ReasonApprovedAwaitingCaller, contract.ReasonSkipAwaitingCaller, contract.ReasonEscalated,
}

// transition is one move of the state machine, by name.
type transition struct {
	name string
	move func(r *runState, reason contract.Reason) error
	// from lists the statuses it is allowed from; to is where it goes.
	from []string
	to   string
	// reasoned moves take a reason (the others make the run running).
	reasoned bool
}

var transitions = []transition{
	{"start", func(r *runState, _ contract.Reason) error { return r.start(owner{PID: 1}) }, []string{""}, stateRunning, false},
	{"resume", func(r *runState, _ contract.Reason) error { return r.resume(owner{PID: 1}) }, []string{statePaused}, stateRunning, false},
	{"retry", func(r *runState, _ contract.Reason) error { return r.retry(owner{PID: 1}) }, []string{stateTerminal}, stateRunning, false},
	{"pause", func(r *runState, reason contract.Reason) error { return r.pause(reason, "step", "att_1") }, []string{stateRunning}, statePaused, true},
	{"rewait", func(r *runState, reason contract.Reason) error { return r.rewait(reason) }, []string{statePaused}, statePaused, true},
	{"finish", func(r *runState, reason contract.Reason) error { return r.finish(reason) }, []string{stateRunning, statePaused}, stateTerminal, true},
}

// runAt is a run in status, as the machine leaves it there: a terminal
// one with a result that allows a retry, attempts left.
func runAt(status string) *runState {
	r := &runState{RunID: "run_1", Attempt: 1, Evidence: []string{"e"}, Digests: map[string]string{"s": "d"}, Completed: []string{}, Approved: []string{}}
	switch status {
	case stateRunning:
		_ = r.start(owner{PID: 2})
	case statePaused:
		_ = r.start(owner{PID: 2})
		_ = r.pause(contract.ReasonApprovalRequired, "step", "att_0")
	case stateTerminal:
		_ = r.start(owner{PID: 2})
		_ = r.finish(contract.ReasonAppOffline)
		r.Receipt = "sha256:receipt"
	}
	return r
}

// TestRunTransitions holds every transition, from every status, to the
// contract's tables: an allowed move lands in its status with the
// outcome the reason table gives its reason — running reads running,
// paused reads needs_review, terminal one of the four terminal outcomes
// of the outcome table — and a refused one changes nothing and is
// errNotContinued.
func TestRunTransitions(t *testing.T) {
	statuses := []string{"", stateRunning, statePaused, stateTerminal}
	for _, tr := range transitions {
		reasons := []contract.Reason{""}
		if tr.reasoned {
			reasons = nil
			for _, info := range contract.Reasons {
				reasons = append(reasons, info.Reason)
			}
		}
		for _, from := range statuses {
			for _, reason := range reasons {
				allowed := slices.Contains(tr.from, from) && reasonFits(tr.to, reason)
				r := runAt(from)
				before := *r
				err := tr.move(r, reason)
				switch {
				case !allowed && !slices.Contains(tr.from, from):
					if !isBadTransition(err) {
						t.Errorf("%s from %q (%s): %v, want a bad transition refused", tr.name, from, reason, err)
					}
					if !reflect.DeepEqual(*r, before) {
						t.Errorf("%s from %q (%s): the refused transition changed the run", tr.name, from, reason)
					}
				case !allowed:
					// A reason of another status: the engine never asks it.
				case err != nil:
					t.Errorf("%s from %q (%s): refused: %v", tr.name, from, reason, err)
				default:
					checkLanded(t, tr, from, reason, r)
				}
			}
		}
	}
}

// checkLanded holds r, moved by tr from from, to the tables.
func checkLanded(t *testing.T, tr transition, from string, reason contract.Reason, r *runState) {
	t.Helper()
	info, ok := r.Outcome.Info()
	switch {
	case r.Status != tr.to:
		t.Errorf("%s from %q: status %q, want %q", tr.name, from, r.Status, tr.to)
	case !ok:
		t.Errorf("%s from %q (%s): outcome %q not in the outcome table", tr.name, from, reason, r.Outcome)
	case tr.reasoned && r.Reason != reason:
		t.Errorf("%s from %q: reason %q, want %q", tr.name, from, r.Reason, reason)
	case r.Outcome != outcomeOf(r.Reason):
		t.Errorf("%s from %q: outcome %q, the reason table gives %q for %q", tr.name, from, r.Outcome, outcomeOf(r.Reason), r.Reason)
	case tr.to == stateTerminal && (!info.Terminal || r.InFlight != "" || r.PausedAt != ""):
		t.Errorf("%s from %q (%s): terminal with outcome %q, in flight %q, paused at %q", tr.name, from, reason, r.Outcome, r.InFlight, r.PausedAt)
	case tr.to == statePaused && r.Outcome != contract.OutcomeNeedsReview:
		t.Errorf("%s from %q (%s): paused reads %q", tr.name, from, reason, r.Outcome)
	case tr.to == stateRunning && (r.Outcome != contract.OutcomeRunning || r.Reason != contract.ReasonInProgress || r.Owner.PID != 1 || r.Receipt != "" || r.PausedAt != ""):
		t.Errorf("%s from %q: running as %+v", tr.name, from, r)
	}
}

// reasonFits reports whether reason is one a run in status to reads:
// in_progress when running, a wait reason when paused, a reason of a
// terminal outcome when terminal.
func reasonFits(to string, reason contract.Reason) bool {
	switch to {
	case stateRunning:
		return true
	case statePaused:
		return slices.Contains(waitReasons, reason)
	}
	return outcomeOf(reason).Terminal()
}

// TestWaitReasonsReadNeedsReview: every reason a paused run reads is one
// the reason table gives needs_review, not a terminal one the outcome
// table would let a caller act on.
func TestWaitReasonsReadNeedsReview(t *testing.T) {
	for _, reason := range waitReasons {
		if o := outcomeOf(reason); o != contract.OutcomeNeedsReview {
			t.Errorf("wait reason %q reads %q", reason, o)
		}
	}
}

// TestRetryIsRefused: a retry needs a result that allows one and an
// attempt left; it starts the next attempt with the last one's evidence
// forgotten.
func TestRetryIsRefused(t *testing.T) {
	notSafe := runAt(stateRunning)
	_ = notSafe.finish(contract.ReasonVerified)
	exhausted := runAt(stateTerminal)
	exhausted.Attempt = MaxAttempts
	for name, r := range map[string]*runState{"not safe to retry": notSafe, "attempts exhausted": exhausted} {
		before := *r
		if err := r.retry(owner{PID: 1}); !isBadTransition(err) {
			t.Errorf("%s: retry = %v, want a bad transition refused", name, err)
		}
		if !reflect.DeepEqual(*r, before) {
			t.Errorf("%s: the refused retry changed the run", name)
		}
	}
	r := runAt(stateTerminal)
	if err := r.retry(owner{PID: 1}); err != nil {
		t.Fatalf("retry = %v", err)
	}
	if r.Attempt != 2 {
		t.Errorf("after retry: attempt %d, want 2", r.Attempt)
	}
	if len(r.Evidence) != 0 {
		t.Errorf("after retry: evidence %+v, want none", r.Evidence)
	}
	if len(r.Digests) != 0 {
		t.Errorf("after retry: digests %+v, want none", r.Digests)
	}
}
