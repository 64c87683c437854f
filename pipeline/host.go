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
	Release *Published
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
// then resolve and bind (bind.ResolveAndBind). It stops at the first refusal,
// returned as is.
func PrepareHost(ctx context.Context, h *host.Host, opts HostOptions) (*bind.Binding, error) {
	rel := opts.Release
	if _, _, err := admit.Admit(ctx, h, &rel.Release, admit.AdmitOptions{AdmittedBy: opts.By, Now: opts.Now}); err != nil {
		return nil, err
	}
	opts.step("admitted on host %s by %s", h.Policy.Host, opts.By)
	if err := SetUpHost(ctx, h, opts); err != nil {
		return nil, err
	}
	b, err := bind.ResolveAndBind(ctx, h, rel.BindRequest(opts.Deployment, opts.Model, opts.By, opts.Now, opts.Connector))
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

// BindRequest is the bind.Request that resolves rel for deployment and
// model and binds it with by's approval.
func (rel *Published) BindRequest(deployment, model, by string, now time.Time, conn connector.Options) bind.Request {
	return bind.Request{Release: &rel.Release, Deployment: deployment, Model: model, By: by, Now: now, Connector: conn}
}
