package coordinator

import (
	"context"
	"time"

	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
)

// teach attaches a signed teach request (attention.TeachRequest) to the
// item while its run still waits on it (open or escalated), in one write
// that leaves the run as it is. The request is signed with the receipt
// key, pinned first as for a receipt.
func teach(ctx context.Context, l *ledger.Ledger, d attention.Decision, now time.Time) (*attention.Item, error) {
	if err := attention.CheckTeachText(d.Text); err != nil {
		return nil, err
	}
	signer, err := l.ReceiptSigner()
	if err != nil {
		return nil, err
	}
	if err := l.PinReceiptKey(ctx, now); err != nil {
		return nil, err
	}
	return onWaitingItem(ctx, l, d, now, func(item *attention.Stored, r *runState) (bool, error) {
		// The pause stays as it is: teaching asks for a revised
		// version, it decides nothing about this run.
		return false, item.AttachTeach(signer, l.Host().Policy.Host, attention.BoundDigests{BindingDigest: r.Binding, PlanDigest: r.PlanDigest}, d, now)
	})
}

// CheckTeachRequests verifies teach requests against the host h with the
// receipt keys h pinned (ledger.Ledger.ReceiptKeyPins; see
// attention.Records.CheckTeachRequests).
func CheckTeachRequests(ctx context.Context, h *host.Host, reqs []attention.SignedTeachRequest) error {
	keys, err := ledger.Open(h).ReceiptKeyPins(ctx)
	if err != nil {
		return err
	}
	return AttentionRecords(h).CheckTeachRequests(ctx, reqs, keys.Key)
}
