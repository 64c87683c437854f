package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/signing"
)

// pauseAt stops r at step s for a person's decision: a new attention item
// and the run's move to paused are one write, and only a run still
// running here moves.
func (c *Coordinator) pauseAt(ctx context.Context, r *runState, s ir.Step, risk ir.Risk) error {
	item := attentionState{AttentionItem: AttentionItem{ID: newID("att"), RunID: r.RunID, Workflow: r.Workflow, Step: s.ID, Capability: s.Capability, Risk: risk,
		State: AttentionOpen, CreatedAt: c.now().UTC(), Outcome: contract.OutcomeNeedsReview,
		Question:  fmt.Sprintf("Approve step %s of workflow %s, which uses the %s capability %s?", s.ID, r.Workflow, risk, s.Capability),
		Skippable: s.SkippableWhile != ""}, Deployment: r.Deployment}
	b, err := json.Marshal(item)
	if err != nil {
		return err
	}
	return ledger.StoreOf(c.host).PauseRun(ctx, store.Attention{ID: item.ID, RunID: r.RunID, State: b}, func(state []byte) ([]byte, error) {
		cur, err := decodeRun(c.secret, state)
		if err != nil {
			return nil, err
		}
		if cur.Status != stateRunning {
			return nil, errNotContinued
		}
		reason := cur.afterChange(contract.ReasonApprovalRequired)
		info, _ := reason.Info()
		cur.Status, cur.Outcome, cur.Reason, cur.PausedAt, cur.AttentionID = statePaused, info.Outcome, reason, s.ID, item.ID
		cur.UpdatedAt = c.now().UTC()
		*r = *cur
		return cur.encode(c.secret)
	})
}

// finish makes a run this process executes terminal and seals its
// receipt in the same write.
func (c *Coordinator) finish(ctx context.Context, runID string, reason contract.Reason) {
	// The write happens even when the coordinator is closing; ctx only
	// carries the run's trace context.
	ctx = context.WithoutCancel(ctx)
	err := c.update(ctx, runID, func(cur *runState) error {
		if cur.Status != stateRunning {
			return errNotContinued // decided or settled meanwhile: leave it
		}
		c.terminal(cur, cur.afterChange(reason))
		return nil
	})
	if err == nil {
		_, err = sealRun(ctx, c.host, c.receipts, runID, c.now())
	}
	if err != nil && !errors.Is(err, errNotContinued) {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: run %s: %v\n", runID, err)
	}
}

// NeedsAttention lists this deployment's open attention items.
func (c *Coordinator) NeedsAttention(ctx context.Context) ([]AttentionItem, error) {
	all, err := listAttention(ctx, c.host, false)
	if err != nil {
		return nil, err
	}
	out := []AttentionItem{}
	for _, a := range all {
		if a.Deployment == c.opts.Deployment {
			out = append(out, a.AttentionItem)
		}
	}
	return out, nil
}

// AttentionItem returns one of this deployment's attention items.
func (c *Coordinator) AttentionItem(ctx context.Context, id string) (*AttentionItem, error) {
	a, err := getAttention(ctx, c.host, id)
	if err != nil {
		return nil, err
	}
	if a.Deployment != c.opts.Deployment {
		return nil, blocking.New(blocking.AttentionUnknown, "no such item on this deployment")
	}
	return &a.AttentionItem, nil
}

// Decide records a person's decision on one of this deployment's items.
func (c *Coordinator) Decide(ctx context.Context, d Decision) (*AttentionItem, error) {
	item, err := c.AttentionItem(ctx, d.AttentionID)
	if err != nil {
		return nil, err
	}
	if item.Kind == KindDownstreamQuestion {
		return decideQuestion(ctx, hostStore{c.host, c.receipts, func(id string) bool { return c.questions.get(id) != nil }}, d, c.now)
	}
	return decide(ctx, c.host, c.receipts, d, c.now)
}

// ListAttention lists the host's attention items: the open ones, or all.
func ListAttention(ctx context.Context, h *host.Host, all bool) ([]AttentionItem, error) {
	items, err := listAttention(ctx, h, all)
	if err != nil {
		return nil, err
	}
	out := make([]AttentionItem, len(items))
	for i, a := range items {
		out[i] = a.AttentionItem
	}
	return out, nil
}

// GetAttention returns one attention item of the host.
func GetAttention(ctx context.Context, h *host.Host, id string) (*AttentionItem, error) {
	a, err := getAttention(ctx, h, id)
	if err != nil {
		return nil, err
	}
	return &a.AttentionItem, nil
}

// DecideAttention records an operator's decision from the CLI.
func DecideAttention(ctx context.Context, h *host.Host, d Decision) (*AttentionItem, error) {
	secret, err := ledger.HostSecret(h.Home)
	if err != nil {
		return nil, err
	}
	signer, err := ledger.ReceiptSigner(h.Home, secret)
	if err != nil {
		return nil, err
	}
	if it, err := getAttention(ctx, h, d.AttentionID); err == nil && it.Kind == KindDownstreamQuestion {
		return decideQuestion(ctx, hostStore{h, signer, func(string) bool { return false }}, d, nil)
	}
	return decide(ctx, h, signer, d, nil)
}

func listAttention(ctx context.Context, h *host.Host, all bool) ([]attentionState, error) {
	rows, err := ledger.StoreOf(h).AttentionItems(ctx)
	if err != nil {
		return nil, err
	}
	var out []attentionState
	for _, row := range rows {
		var a attentionState
		if err := json.Unmarshal(row.State, &a); err != nil {
			return nil, err
		}
		if all || a.State == AttentionOpen {
			out = append(out, a)
		}
	}
	return out, nil
}

func getAttention(ctx context.Context, h *host.Host, id string) (*attentionState, error) {
	row, err := ledger.StoreOf(h).AttentionByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, blocking.New(blocking.AttentionUnknown, "no such item")
	}
	var a attentionState
	if err := json.Unmarshal(row.State, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// decide records the decision on the item and moves its run, in one
// write, and only while the run waits on this very item: approve lets the
// run resume when its caller asks again with the same request and inputs
// (which are never stored); skip lets it resume without the step, where
// the package declares the step skippable; reject ends it; escalate
// leaves it waiting for the people it was escalated to; teach (teach.go)
// attaches a request for a revised package version and leaves the pause
// as it is.
func decide(ctx context.Context, h *host.Host, signer *signing.Signer, d Decision, clock func() time.Time) (*AttentionItem, error) {
	if clock == nil {
		clock = time.Now
	}
	if !slices.Contains(contract.Decisions, d.Decision) || strings.TrimSpace(d.By) == "" {
		return nil, blocking.New(blocking.DecisionInvalid, "a decision is approve, reject, escalate, skip or teach, by a named person")
	}
	if _, err := getAttention(ctx, h, d.AttentionID); err != nil {
		return nil, err
	}
	if d.Decision == contract.DecisionTeach {
		return teach(ctx, h, signer, d, clock().UTC())
	}
	now := clock().UTC()
	key, err := runKey(h.Home)
	if err != nil {
		return nil, err
	}
	var item attentionState
	var run *runState
	err = ledger.StoreOf(h).DecideAttention(ctx, d.AttentionID, func(itemState, runState []byte) ([]byte, []byte, error) {
		if err := json.Unmarshal(itemState, &item); err != nil {
			return nil, nil, err
		}
		r, err := decodeRun(key, runState)
		if err != nil {
			return nil, nil, err
		}
		// An escalated item waits for the people it went to: they may
		// still approve or reject it, once.
		if item.State != AttentionOpen && !(item.State == AttentionEscalated && d.Decision != contract.DecisionEscalate) {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the item is %s", item.State)
		}
		if r.Status != statePaused || r.AttentionID != item.ID {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the run no longer waits on this item")
		}
		if d.Decision == contract.DecisionSkip && !item.Skippable {
			return nil, nil, blocking.New(blocking.SkipNotDeclared, "the package does not declare step %s skippable", item.Step)
		}
		item.State = map[string]string{contract.DecisionApprove: AttentionApproved, contract.DecisionReject: AttentionRejected,
			contract.DecisionEscalate: AttentionEscalated, contract.DecisionSkip: AttentionSkipped}[d.Decision]
		item.DecidedBy, item.Channel, item.DecidedAt = d.By, d.Channel, &now
		switch d.Decision {
		case contract.DecisionApprove:
			if !r.approved(item.Step) {
				r.Approved = append(r.Approved, item.Step)
			}
			r.Reason = contract.ReasonApprovedAwaitingCaller
		case contract.DecisionReject:
			reason := r.afterChange(contract.ReasonRejected)
			info, _ := reason.Info()
			r.Status, r.Outcome, r.Reason, r.InFlight, r.PausedAt = stateTerminal, info.Outcome, reason, "", ""
		case contract.DecisionEscalate:
			r.Reason = contract.ReasonEscalated
		case contract.DecisionSkip:
			// Whether the declared guard still holds is decided when the
			// run reaches the step again (see skipStep): inputs are never
			// stored, so the guard can only be evaluated with the caller's.
			if !r.skipAllowed(item.Step) {
				r.SkipAllowed = append(r.SkipAllowed, item.Step)
			}
			r.Reason = contract.ReasonSkipAwaitingCaller
		}
		r.UpdatedAt = now
		run = r
		b, err := json.Marshal(item)
		if err != nil {
			return nil, nil, err
		}
		rb, err := r.encode(key)
		return b, rb, err
	})
	if err != nil {
		return nil, err
	}
	if run.Status == stateTerminal {
		if _, err := sealRun(ctx, h, signer, run.RunID, now); err != nil {
			return nil, err
		}
	}
	return &item.AttentionItem, nil
}
