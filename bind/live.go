package bind

import (
	"context"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// InspectOptions are the settings of Inspect.
type InspectOptions struct {
	// Transport is how the bound release's registry is reached; the host
	// policy's limits apply over it, as for the coordinator.
	Transport oci.OpenOptions
	// Now is the time the admission must be active at.
	Now time.Time
	// Model, when set, checks the plan as if the deployment ran this model.
	Model string
	// Probe starts each connection of the recomputed plan (with
	// Connector) to compare its live tool list with the verified one.
	Probe     bool
	Connector connector.Options
}

// Inspect answers a person asking whether a deployment's bound plan is
// still the one that would be approved now: it fetches the bound release
// as the coordinator does (FetchRelease) and makes the one plan check
// (Check), probing each connection when opts.Probe. A release that is
// refused on fetch (gone, corrupted, over the host's limits) is a report
// whose changed link says so, not an error: the error is for program
// faults only. The report's Err is the refusal a changed plan gives.
func Inspect(ctx context.Context, h *host.Host, b *Binding, opts InspectOptions) (*Report, error) {
	art, err := FetchRelease(ctx, h, b, opts.Transport)
	if err != nil {
		if blocking.Refusals(err) == nil {
			return nil, err
		}
		return Compare(b, nil, err), nil
	}
	check := CheckOptions{Now: opts.Now, Model: opts.Model}
	if opts.Probe {
		check.Live = func(ctx context.Context, st *resolve.State, plan *resolve.Plan) error {
			return resolve.CheckLive(ctx, st, plan, opts.Connector)
		}
	}
	report, _, err := Check(ctx, h, b, art, check)
	return report, err
}
