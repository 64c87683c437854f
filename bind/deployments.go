package bind

import (
	"context"
	"sort"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
)

// Deployments returns the names of the deployments bound on h, sorted:
// every name with a binding version, whether or not the latest verifies
// (Current checks it). What shell completion offers.
func Deployments(ctx context.Context, h *host.Host) ([]string, error) {
	vs, err := h.Versions().LatestOfKind(ctx, store.KindBinding)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vs))
	for _, v := range vs {
		names = append(names, v.Key)
	}
	sort.Strings(names)
	return names, nil
}
