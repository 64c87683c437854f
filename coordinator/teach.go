package coordinator

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/signing"
)

// Teach requests (ledger.TeachRequest) are made here, on a paused run,
// and attached to its attention item; the ledger signs and checks them.

// MaxTeachText bounds a teach request's text, in bytes: the ledger's
// bound, which the MCP face states in its form.
const MaxTeachText = ledger.MaxTeachText

// MaxTeachPerItem bounds the teach requests one attention item holds, so
// an item (read whole by every listing) stays small.
const MaxTeachPerItem = 16

// teach attaches a signed teach request to the item while its run still
// waits on it (open or escalated), in one write that leaves the run as it
// is.
func teach(ctx context.Context, h *host.Host, signer *signing.Signer, d Decision, now time.Time) (*AttentionItem, error) {
	if err := ledger.CheckTeachText(d.Text); err != nil {
		return nil, err
	}
	if err := ledger.PinReceiptKey(ctx, h, signer, now); err != nil {
		return nil, err
	}
	key, err := runKey(h.Home)
	if err != nil {
		return nil, err
	}
	var item attentionState
	err = ledger.StoreOf(h).DecideAttention(ctx, d.AttentionID, func(itemState, runState []byte) ([]byte, []byte, error) {
		if err := json.Unmarshal(itemState, &item); err != nil {
			return nil, nil, err
		}
		r, err := decodeRun(key, runState)
		if err != nil {
			return nil, nil, err
		}
		if item.State != AttentionOpen && item.State != AttentionEscalated {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the item is %s", item.State)
		}
		if r.Status != statePaused || r.AttentionID != item.ID {
			return nil, nil, blocking.New(blocking.AttentionDecided, "the run no longer waits on this item")
		}
		if len(item.Teach) >= MaxTeachPerItem {
			return nil, nil, blocking.New(blocking.TeachRequestsFull, "the item holds %d teach requests", len(item.Teach))
		}
		signed, err := ledger.SignTeach(signer, ledger.TeachRequest{Type: ledger.TeachRequestType, Host: h.Policy.Host, Deployment: item.Deployment,
			AttentionID: item.ID, RunID: item.RunID, Workflow: item.Workflow, Step: item.Step, Capability: item.Capability,
			BindingDigest: r.Binding, PlanDigest: r.PlanDigest, By: d.By, Channel: d.Channel, Text: d.Text, At: now.Truncate(time.Millisecond)})
		if err != nil {
			return nil, nil, err
		}
		item.Teach = append(item.Teach, *signed)
		item.TeachRequests = len(item.Teach)
		b, err := json.Marshal(item)
		return b, runState, err
	})
	if err != nil {
		return nil, err
	}
	return &item.AttentionItem, nil
}

// TeachRequestsFor returns the teach requests attached to one item.
func TeachRequestsFor(ctx context.Context, h *host.Host, attentionID string) ([]ledger.SignedTeachRequest, error) {
	a, err := getAttention(ctx, h, attentionID)
	if err != nil {
		return nil, err
	}
	return append([]ledger.SignedTeachRequest{}, a.Teach...), nil
}
