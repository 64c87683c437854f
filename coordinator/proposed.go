package coordinator

import (
	"context"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator/attention"
)

// ProposedChange opens the change one of this deployment's attention
// items proposes (nil for an item without one: a question, or an item
// made before changes were kept). It holds customer state: it is for the
// person deciding — the operator, or the person at the MCP client, who is
// inside the host's boundary — never for the calling agent's results,
// telemetry or a log.
func (dk *desk) ProposedChange(ctx context.Context, attentionID string) (*attention.ProposedChange, error) {
	a, err := AttentionRecords(dk.host).LoadOne(ctx, attentionID)
	if err != nil {
		return nil, err
	}
	if a.Deployment != dk.opts.Deployment {
		return nil, blocking.New(blocking.AttentionUnknown, "no such item on this deployment")
	}
	return a.Proposed(dk.secret)
}
