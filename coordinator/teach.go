package coordinator

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/signing"
)

// teach attaches a signed teach request (attention.TeachRequest) to the
// item while its run still waits on it (open or escalated), in one write
// that leaves the run as it is. The request is signed with the receipt
// key, pinned first as for a receipt.
func teach(ctx context.Context, h *host.Host, signer *signing.Signer, d attention.Decision, now time.Time) (*attention.Item, error) {
	if err := attention.CheckTeachText(d.Text); err != nil {
		return nil, err
	}
	if err := ledger.PinReceiptKey(ctx, h, signer, now); err != nil {
		return nil, err
	}
	key, err := runKey(h.Home)
	if err != nil {
		return nil, err
	}
	var item attention.Stored
	err = ledger.StoreOf(h).DecideAttention(ctx, d.AttentionID, func(itemState, runState []byte) ([]byte, []byte, error) {
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
		if err := item.AttachTeach(signer, h.Policy.Host, attention.Release{BindingDigest: r.Binding, PlanDigest: r.PlanDigest}, d, now); err != nil {
			return nil, nil, err
		}
		b, err := json.Marshal(item)
		return b, runState, err
	})
	if err != nil {
		return nil, err
	}
	return &item.Item, nil
}

// CheckTeachRequests verifies teach requests against the host h with the
// receipt keys h pinned (ledger.ReceiptKeyPins; see
// attention.Records.CheckTeachRequests).
func CheckTeachRequests(ctx context.Context, h *host.Host, reqs []attention.SignedTeachRequest) error {
	keys, err := ledger.ReceiptKeyPins(ctx, h)
	if err != nil {
		return err
	}
	return AttentionRecords(h).CheckTeachRequests(ctx, reqs, keys.Key)
}
