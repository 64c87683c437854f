package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/store"
)

// openAttention pauses r at effect step s: one attention item per run and
// step, asking a person to decide.
func (c *Coordinator) openAttention(ctx context.Context, r *runState, s ir.Step, risk ir.Risk) error {
	if r.AttentionID != "" {
		if a, err := c.host.DB().AttentionByID(ctx, r.AttentionID); err == nil && a != nil {
			var st attentionState
			if json.Unmarshal(a.State, &st) == nil && st.Step == s.ID && st.State == AttentionOpen {
				return nil
			}
		}
	}
	item := attentionState{AttentionItem: AttentionItem{ID: newID("att"), RunID: r.RunID, Workflow: r.Workflow, Step: s.ID, Capability: s.Capability, Risk: risk,
		State: AttentionOpen, CreatedAt: c.now().UTC(), Outcome: harness.OutcomeNeedsReview,
		Question: fmt.Sprintf("Approve step %s of workflow %s, which uses the %s capability %s?", s.ID, r.Workflow, risk, s.Capability)}, Deployment: r.Deployment}
	b, err := json.Marshal(item)
	if err != nil {
		return err
	}
	if err := c.host.DB().InsertAttention(ctx, store.Attention{ID: item.ID, RunID: r.RunID, State: b}); err != nil {
		return err
	}
	r.AttentionID = item.ID
	return c.update(ctx, r.RunID, func(cur *runState) error { cur.AttentionID = item.ID; return nil })
}

// pause leaves the run waiting for a person: needs_review.
func (c *Coordinator) pause(runID string, reason Reason) {
	info, _ := reason.Info()
	err := c.update(context.Background(), runID, func(cur *runState) error {
		cur.Status, cur.Outcome, cur.Reason = statePaused, info.Outcome, reason
		return nil
	})
	if err != nil {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: run %s: %v\n", runID, err)
	}
}

// finish makes the run terminal and seals its receipt.
func (c *Coordinator) finish(runID string, reason Reason) {
	var r *runState
	err := c.update(context.Background(), runID, func(cur *runState) error {
		c.terminal(cur, reason)
		r = cur
		return nil
	})
	if err == nil {
		err = c.seal(context.Background(), r)
	}
	if err != nil {
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
	if _, err := c.AttentionItem(ctx, d.AttentionID); err != nil {
		return nil, err
	}
	return decide(ctx, c.host, c.receipts, d, c.now)
}

// ListAttention lists the host's attention items: the open ones, or all.
func ListAttention(ctx context.Context, h *admit.Host, all bool) ([]AttentionItem, error) {
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
func GetAttention(ctx context.Context, h *admit.Host, id string) (*AttentionItem, error) {
	a, err := getAttention(ctx, h, id)
	if err != nil {
		return nil, err
	}
	return &a.AttentionItem, nil
}

// DecideAttention records an operator's decision from the CLI.
func DecideAttention(ctx context.Context, h *admit.Host, d Decision) (*AttentionItem, error) {
	signer, err := receiptKeys(h.Home)
	if err != nil {
		return nil, err
	}
	return decide(ctx, h, signer, d, nil)
}

func listAttention(ctx context.Context, h *admit.Host, all bool) ([]attentionState, error) {
	rows, err := h.DB().AttentionItems(ctx)
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

func getAttention(ctx context.Context, h *admit.Host, id string) (*attentionState, error) {
	row, err := h.DB().AttentionByID(ctx, id)
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

// decide records the decision on the item and moves its run: approve lets
// the run resume when its caller asks again with the same request and
// inputs (which are never stored); reject ends it as did_not_run;
// escalate leaves it waiting for the people it was escalated to.
func decide(ctx context.Context, h *admit.Host, signer *oci.Signer, d Decision, clock func() time.Time) (*AttentionItem, error) {
	if clock == nil {
		clock = time.Now
	}
	if !slices.Contains(harness.Decisions, d.Decision) || strings.TrimSpace(d.By) == "" {
		return nil, blocking.New(blocking.DecisionInvalid, "a decision is approve, reject or escalate, by a named person")
	}
	if _, err := getAttention(ctx, h, d.AttentionID); err != nil {
		return nil, err
	}
	now := clock().UTC()
	var item attentionState
	err := h.DB().UpdateAttention(ctx, d.AttentionID, func(b []byte) ([]byte, error) {
		if err := json.Unmarshal(b, &item); err != nil {
			return nil, err
		}
		// An escalated item waits for the people it went to: they may
		// still approve or reject it, once.
		if item.State != AttentionOpen && !(item.State == AttentionEscalated && d.Decision != harness.DecisionEscalate) {
			return nil, blocking.New(blocking.AttentionDecided, "the item is %s", item.State)
		}
		item.State = map[string]string{harness.DecisionApprove: AttentionApproved, harness.DecisionReject: AttentionRejected, harness.DecisionEscalate: AttentionEscalated}[d.Decision]
		item.DecidedBy, item.Channel, item.DecidedAt = d.By, d.Channel, &now
		return json.Marshal(item)
	})
	if err != nil {
		return nil, err
	}
	var run *runState
	err = h.DB().UpdateRun(ctx, item.RunID, func(b []byte) ([]byte, error) {
		r, err := decodeRun(b)
		if err != nil {
			return nil, err
		}
		switch d.Decision {
		case harness.DecisionApprove:
			if !r.approved(item.Step) {
				r.Approved = append(r.Approved, item.Step)
			}
			r.Reason = ReasonApprovedAwaitingCaller
		case harness.DecisionReject:
			info, _ := ReasonRejected.Info()
			r.Status, r.Outcome, r.Reason, r.InFlight = stateTerminal, info.Outcome, ReasonRejected, ""
		case harness.DecisionEscalate:
			r.Reason = ReasonEscalated
		}
		r.UpdatedAt = now
		run = r
		return r.encode()
	})
	if err != nil {
		return nil, err
	}
	if run.Status == stateTerminal {
		digest, err := appendReceipt(ctx, h, signer, run, now)
		if err != nil {
			return nil, err
		}
		if err := h.DB().UpdateRun(ctx, run.RunID, func(b []byte) ([]byte, error) {
			r, err := decodeRun(b)
			if err != nil {
				return nil, err
			}
			r.Receipt = digest
			return r.encode()
		}); err != nil {
			return nil, err
		}
	}
	return &item.AttentionItem, nil
}
