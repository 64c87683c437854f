package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
)

// Connection is a connection PrepareHost adds and verifies.
type Connection struct {
	Name      string
	Connector string
	Config    connector.Config
}

// HostOptions is what PrepareHost prepares on a host.
type HostOptions struct {
	// Release is the published release to admit, resolve and bind
	// (PrepareHost only).
	Release *Release
	// By is the operator recorded on every step: the admission, the
	// registry review, each connection change and the binding approval.
	By  string
	Now time.Time
	// Connections are added (replacing one of the same name) and
	// verified before the plan is resolved.
	Connections []Connection
	// Connector is how connections are started to verify and probe them.
	Connector connector.Options
	// Deployment and Model are what the plan is resolved for and bound to.
	Deployment, Model string
	// Progress, when not nil, is told each step done, one line each.
	Progress func(line string)
}

// PrepareHost runs the operator's half of the pipeline on host h: admit
// the release, SetUpHost (starter registry signed, connections verified),
// then resolve and bind (ResolveAndBind). It stops at the first refusal,
// returned as is.
func PrepareHost(ctx context.Context, h *host.Host, opts HostOptions) (*bind.Binding, error) {
	rel := opts.Release
	if _, _, err := admit.Admit(ctx, h, rel.Target, rel.Desc, admit.AdmitOptions{AdmittedBy: opts.By, Now: opts.Now}); err != nil {
		return nil, err
	}
	opts.step("admitted on host %s by %s", h.Policy.Host, opts.By)
	if err := SetUpHost(ctx, h, opts); err != nil {
		return nil, err
	}
	b, err := ResolveAndBind(ctx, h, BindRequest{Release: rel, Deployment: opts.Deployment, Model: opts.Model, By: opts.By, Now: opts.Now, Connector: opts.Connector})
	if err != nil {
		return nil, err
	}
	opts.step("plan %s resolved and bound to deployment %s", b.PlanDigest, opts.Deployment)
	return b, nil
}

// SetUpHost is the release-independent part of PrepareHost (what a host
// that a fleet provisions needs before its first envelope): write the
// starter capability registry (resolve.InitRegistry: a host with a
// registry file already refuses host_exists) and sign it as By, then add
// each connection (replacing one of the same name, so a name listed
// twice gets a second revision) and verify it. Release, Deployment and
// Model are not used.
func SetUpHost(ctx context.Context, h *host.Host, opts HostOptions) error {
	reg, err := signRegistry(ctx, h, opts.By, opts.Now)
	if err != nil {
		return err
	}
	opts.step("capability registry signed (%s)", reg.Digest())
	change := connection.Change{By: opts.By, Now: opts.Now}
	for _, c := range opts.Connections {
		if _, err := connection.Add(ctx, h, connection.AddOptions{Name: c.Name, Connector: c.Connector, Config: c.Config, Replace: true}, change); err != nil {
			return err
		}
		if _, err := connection.Verify(ctx, h, c.Name, opts.Connector, change); err != nil {
			return err
		}
		opts.step("%s connection verified", c.Name)
	}
	return nil
}

// step tells Progress one step done.
func (o *HostOptions) step(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// signRegistry writes the starter registry and signs it; a host that has
// a registry file already refuses host_exists (nothing is overwritten).
func signRegistry(ctx context.Context, h *host.Host, by string, now time.Time) (*resolve.Registry, error) {
	path, err := resolve.InitRegistry(h.Home, h.Policy.Host)
	if err != nil {
		return nil, err
	}
	reg, _, err := resolve.SignRegistryFile(ctx, h, path, by, now)
	return reg, err
}

// BindRequest is a release's plan to resolve and a person's approval to
// bind it.
type BindRequest struct {
	Release           *Release
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
// (every connection of the plan probed live unless NoProbe) and binds it
// with By's explicit approval, after Gate if one is set. It returns the
// binding made, or nil (and no error) where Gate chose not to bind.
func ResolveAndBind(ctx context.Context, h *host.Host, req BindRequest) (*bind.Binding, error) {
	rel := req.Release
	plan, _, err := resolve.Compute(ctx, h, rel.Target, rel.Desc, resolve.Request{Deployment: req.Deployment, Model: req.Model}, resolve.ComputeOptions{Now: req.Now, Probe: !req.NoProbe, Connector: req.Connector})
	if err != nil {
		return nil, err
	}
	if req.Gate != nil {
		if ok, err := req.Gate(ctx, plan); err != nil || !ok {
			return nil, err
		}
	}
	return bind.Bind(ctx, h, rel.Ref, false, plan, bind.Approval{By: req.By, Approved: true, Now: req.Now})
}
