package bind

import (
	"context"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
)

// Request is a release to resolve a plan for and a person's approval to
// bind it (ResolveAndBind).
type Request struct {
	// Release is the release, opened once by the caller: read from its
	// Target, and its Ref (pinned to the digest) is what the binding
	// records.
	Release *oci.Release
	// Deployment and Model are what the plan is resolved for and bound to.
	Deployment, Model string
	// By is the person approving the binding.
	By  string
	Now time.Time
	// Connector is how the plan's connections are started to check them
	// live.
	Connector connector.Options
	// NoProbe resolves without starting the plan's connections to compare
	// their live tool lists with the verified ones (a fleet provisioning
	// run with probing off); the coordinator still checks them live
	// before it serves.
	NoProbe bool
	// Gate, when not nil, is asked with the resolved plan before anything
	// is bound: it returns false to bind nothing and leave the deployment
	// as it is (a fleet host already bound to this plan), or a refusal
	// (a fleet's ceiling or its rebinding rules), which ResolveAndBind
	// returns as is. It is how a caller puts its own approval between
	// resolving and binding without rebuilding the sequence.
	Gate func(ctx context.Context, plan *resolve.Plan) (bind bool, err error)
}

// ResolveAndBind computes the release's plan for the deployment and model
// (resolve.Compute, every connection of the plan probed live unless
// NoProbe) and binds it with By's explicit approval, after Gate if one is
// set, keeping the release in the host's release store first (BindKept).
// It returns the binding made, or nil (and no error) where Gate chose not
// to bind. It lives here rather than in pipeline so that the
// host side (fleet provisioning) can call it without loading the
// publisher's compiler.
func ResolveAndBind(ctx context.Context, h *host.Host, req Request) (*Binding, error) {
	plan, _, err := resolve.Compute(ctx, h, req.Release, resolve.Request{Deployment: req.Deployment, Model: req.Model}, resolve.ComputeOptions{Now: req.Now, Probe: !req.NoProbe, Connector: req.Connector})
	if err != nil {
		return nil, err
	}
	if req.Gate != nil {
		if ok, err := req.Gate(ctx, plan); err != nil || !ok {
			return nil, err
		}
	}
	return BindKept(ctx, h, req.Release, plan, Approval{By: req.By, Approved: true, Now: req.Now})
}
