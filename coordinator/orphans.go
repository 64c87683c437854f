package coordinator

import (
	"context"
	"fmt"
	"io"

	"github.com/oa-dev/oa/connector/proc"
	"github.com/oa-dev/oa/host"
)

// reapOrphans ends the downstream process trees a coordinator of this host
// started and left running when it died (killed with SIGKILL, crashed):
// the host's owned trees name them, by cgroup or by pid and start time, with
// their owner. It runs at every session start, before anything else is
// started. Trees of a live coordinator are left alone. A tree that would
// not end is told to the operator and stays recorded for the next start;
// it does not keep this session from starting.
func reapOrphans(ctx context.Context, h *host.Host, secret []byte, operator io.Writer) {
	n, err := proc.ReapOrphans(ctx, h.OwnedTrees(secret))
	if n > 0 {
		fmt.Fprintf(operator, "oa coordinator: ended %d downstream process tree(s) left running by a coordinator that died\n", n)
	}
	if err != nil {
		fmt.Fprintf(operator, "oa coordinator: downstream processes left by a coordinator that died could not all be ended: %v\n", err)
	}
}
