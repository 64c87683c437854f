package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
)

// pauseAt stops r at step s for a person's decision on the change it
// proposes: a new attention item, carrying the change sealed with the
// host's secret and its call's digest, and the run's move to paused are
// one write, and only a run still running here moves. A decision made
// earlier on the step for another call no longer holds.
func (eng *engine) pauseAt(ctx context.Context, r *runState, s ir.Step, risk ir.Risk, proposed attention.ProposedChange) error {
	item := attention.NewApproval(attention.Pause{ID: newID("att"), RunID: r.RunID, Deployment: r.Deployment, Workflow: r.Workflow, Step: s, Risk: risk, At: eng.now().UTC()})
	if err := item.Propose(eng.secret, proposed); err != nil {
		return err
	}
	b, err := json.Marshal(item)
	if err != nil {
		return err
	}
	err = eng.writer.Pause(ctx, ledger.AttentionRow{ID: item.ID, RunID: r.RunID, State: b}, func(cur *runState) error {
		if err := cur.pause(cur.afterChange(contract.ReasonApprovalRequired), s.ID, item.ID); err != nil {
			return err
		}
		cur.forgetDecision(s.ID)
		*r = *cur
		return nil
	})
	if err == nil {
		eng.desk.notifyPaused(&item)
	}
	return err
}

// finish makes a run this process executes terminal, with the reason
// reasonOf gives its stored state (what it owes applied), and seals its
// receipt in the same write (ledger.RunWriter.Finish). When the receipt
// cannot be sealed the outcome is still written, alone, and the fault
// told to the operator; the run is sealed when next read (settle). It
// returns the state it sealed, or nil when it sealed none.
func (eng *engine) finish(ctx context.Context, runID string, reasonOf func(*runState) contract.Reason) *runState {
	// The write happens even when the coordinator is closing; ctx only
	// carries the run's trace context.
	ctx = context.WithoutCancel(ctx)
	if eng.intakes.wait(runID) != nil {
		return nil // refused at its intake: there is no run to end
	}
	ended := func(cur *runState) error {
		if cur.Status != stateRunning {
			return errNotContinued // decided or settled meanwhile: leave it
		}
		return cur.finish(cur.afterChange(reasonOf(cur)))
	}
	sealed, err := eng.writer.Finish(ctx, runID, eng.now(), ended)
	switch {
	case err == nil:
		return sealed
	case errors.Is(err, errNotContinued):
		return nil
	}
	fmt.Fprintf(eng.opts.Operator, "oa coordinator: run %s: %v\n", runID, err)
	if err := eng.update(ctx, runID, ended); err != nil && !errors.Is(err, errNotContinued) {
		fmt.Fprintf(eng.opts.Operator, "oa coordinator: run %s: %v\n", runID, err)
	}
	return nil
}

// AttentionRecords are host h's attention records, for the readers that
// have a host but no running coordinator (the CLI; audit builds its own
// on the ledger's store).
func AttentionRecords(h *host.Host) attention.Records {
	return attention.Records{Rows: ledger.Open(h).Tables(), Home: h.Home, Host: h.Policy.Host, Secret: ledger.Open(h).Secret}
}

// NeedsAttention lists this deployment's open attention items.
func (dk *desk) NeedsAttention(ctx context.Context) ([]attention.Item, error) {
	all, err := AttentionRecords(dk.host).Load(ctx, false)
	if err != nil {
		return nil, err
	}
	out := []attention.Item{}
	for _, a := range all {
		if a.Deployment == dk.opts.Deployment {
			out = append(out, a.Item)
		}
	}
	return out, nil
}

// AttentionItem returns one of this deployment's attention items.
func (dk *desk) AttentionItem(ctx context.Context, id string) (*attention.Item, error) {
	a, err := AttentionRecords(dk.host).LoadOne(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.Deployment != dk.opts.Deployment {
		return nil, blocking.New(blocking.AttentionUnknown, "no such item on this deployment")
	}
	return &a.Item, nil
}

// Decide records a person's decision on one of this deployment's items.
func (dk *desk) Decide(ctx context.Context, d attention.Decision) (*attention.Item, error) {
	item, err := dk.AttentionItem(ctx, d.AttentionID)
	if err != nil {
		return nil, err
	}
	if err := dk.signFor(ctx, &d); err != nil {
		return nil, err
	}
	if err := holdToPolicy(ctx, dk.host, &d, dk.now().UTC()); err != nil {
		return nil, err
	}
	if item.Kind == attention.KindDownstreamQuestion {
		return decideQuestion(ctx, hostStore{dk.ledger, func(id string) bool { return dk.questions.get(id) != nil }}, d, dk.now)
	}
	return decide(ctx, dk.ledger, d, dk.now)
}

// DecideAttention records an operator's decision from the CLI. It is the
// engine's, not the records': a decision moves the run and may seal its
// receipt.
func DecideAttention(ctx context.Context, h *host.Host, d attention.Decision) (*attention.Item, error) {
	l := ledger.Open(h)
	if err := holdToPolicy(ctx, h, &d, time.Now().UTC()); err != nil {
		return nil, err
	}
	if it, err := AttentionRecords(h).LoadOne(ctx, d.AttentionID); err == nil && it.Kind == attention.KindDownstreamQuestion {
		return decideQuestion(ctx, hostStore{l, func(string) bool { return false }}, d, nil)
	}
	return decide(ctx, l, d, nil)
}

// decide records the decision on the item and moves its run, in one
// write, and only while the run waits on this very item: approve lets the
// run resume when its caller asks again with the same request and inputs
// (which are never stored); skip lets it resume without the step, where
// the package declares the step skippable; reject ends it; escalate
// leaves it waiting for the people it was escalated to; teach (teach.go)
// attaches a request for a revised package version and leaves the pause
// as it is. The item's own rules are attention's (Stored.Waits,
// Stored.Decide).
func decide(ctx context.Context, l *ledger.Ledger, d attention.Decision, clock func() time.Time) (*attention.Item, error) {
	if clock == nil {
		clock = time.Now
	}
	if err := attention.CheckDecision(d); err != nil {
		return nil, err
	}
	if _, err := AttentionRecords(l.Host()).LoadOne(ctx, d.AttentionID); err != nil {
		return nil, err
	}
	if d.Decision == contract.DecisionTeach {
		return teach(ctx, l, d, clock().UTC())
	}
	now := clock().UTC()
	return onWaitingItem(ctx, l, d, now, func(item *attention.Stored, r *runState) (bool, error) {
		if err := item.Decide(d, now); err != nil {
			return false, err
		}
		moveOnDecision(r, item.Step, item.CallDigest, d.Decision)
		return true, nil
	})
}

// moveOnDecision moves run r, paused at step, on a person's decision on
// the call of digest callDigest: an approval or a skip holds for that
// call only (see Coordinator.approvalFor and skipStep). r is paused
// (onWaitingItem holds it), so no transition here is refused.
func moveOnDecision(r *runState, step, callDigest, decision string) {
	switch decision {
	case contract.DecisionApprove, contract.DecisionSkip:
		if r.DecidedCalls == nil {
			r.DecidedCalls = map[string]string{}
		}
		r.DecidedCalls[step] = callDigest
	}
	switch decision {
	case contract.DecisionApprove:
		if !r.approved(step) {
			r.Approved = append(r.Approved, step)
		}
		_ = r.rewait(contract.ReasonApprovedAwaitingCaller)
	case contract.DecisionReject:
		_ = r.finish(r.afterChange(contract.ReasonRejected))
	case contract.DecisionEscalate:
		_ = r.rewait(contract.ReasonEscalated)
	case contract.DecisionSkip:
		// Whether the declared guard still holds is decided when the
		// run reaches the step again (see skipStep): inputs are never
		// stored, so the guard can only be evaluated with the caller's.
		if !r.skipAllowed(step) {
			r.SkipAllowed = append(r.SkipAllowed, step)
		}
		_ = r.rewait(contract.ReasonSkipAwaitingCaller)
	}
}

// onWaitingItem is the one write every decision makes: it loads the item
// and its run, holds that the item still waits for d and that the run is
// paused on this very item, lets change decide on them (moving the run
// or not: change reports whether it did), stores both in one transaction
// and, when the run ended here, seals its receipt.
func onWaitingItem(ctx context.Context, l *ledger.Ledger, d attention.Decision, now time.Time, change func(item *attention.Stored, r *runState) (moved bool, err error)) (*attention.Item, error) {
	key, err := l.Secret()
	if err != nil {
		return nil, err
	}
	var item attention.Stored
	var run *runState
	err = l.Tables().DecideAttention(ctx, d.AttentionID, func(itemState, runState []byte) ([]byte, []byte, error) {
		if err := json.Unmarshal(itemState, &item); err != nil {
			return nil, nil, err
		}
		r, err := decodeRun(key, runState)
		if err != nil {
			return nil, nil, err
		}
		if err := item.Waits(d); err != nil {
			return nil, nil, err
		}
		if r.Status != statePaused || r.AttentionID != item.ID {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the run no longer waits on this item")
		}
		if d.Signed != nil && d.Signed.Statement.CallDigest != item.Subject() {
			return nil, nil, blocking.New(blocking.DecisionStatementMismatch, "the statement names another proposed call than the item waits on")
		}
		moved, err := change(&item, r)
		if err != nil {
			return nil, nil, err
		}
		item.KeepSigned(d)
		ib, err := json.Marshal(item)
		if err != nil || !moved {
			return ib, runState, err
		}
		r.UpdatedAt = now
		run = r
		rb, err := r.encode(key)
		return ib, rb, err
	})
	if err != nil {
		return nil, err
	}
	if run != nil && run.Status == stateTerminal {
		if _, err := sealRun(ctx, l, run.RunID, now); err != nil {
			return nil, err
		}
	}
	return &item.Item, nil
}
