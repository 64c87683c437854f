package resolve

import (
	"context"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// Load reads and verifies everything a resolution of the release rel
// needs: that it is actively admitted now, the artifact itself (every blob
// digest-checked), its harness projection, the signed capability registry
// and the host's connections.
func Load(ctx context.Context, h *host.Host, rel *oci.Release, now time.Time) (*State, error) {
	status, err := admit.StatusOf(ctx, h, rel.Descriptor.Digest.String(), now)
	if err != nil {
		return nil, err
	}
	if status.State != admit.Active {
		return nil, blocking.List{blocking.New(blocking.AdmissionNotActive, "the release is %s", status.State), status.Why}
	}
	art, err := oci.FetchBound(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	if err != nil {
		return nil, err
	}
	if art.IRDigest != status.Record.WorkerIRDigest {
		return nil, blocking.New(blocking.AdmissionMismatched, "the artifact's Worker IR is not the one admitted")
	}
	return LoadFor(ctx, h, art, status.RecordDigest)
}

// LoadFor is Load for an artifact already fetched and verified, whose
// active admission record has admissionDigest. The coordinator uses it to
// recompute a plan without fetching the immutable artifact again.
//
// The registry and the projection of a State may be shared with other
// States of the same process (see loadRegistry and project); like the
// artifact's Worker, they must not be changed.
func LoadFor(ctx context.Context, h *host.Host, art *oci.Artifact, admissionDigest string) (*State, error) {
	digest := art.Descriptor.Digest.String()
	proj, err := project(art.Worker, digest, art.IRDigest)
	if err != nil {
		return nil, err
	}
	reg, err := loadRegistry(filepath.Join(h.Home, RegistryFile))
	if err != nil {
		return nil, err
	}
	if _, err := CheckRegistrySigned(ctx, h, reg); err != nil {
		return nil, err
	}
	conns, err := connection.List(ctx, h)
	if err != nil {
		return nil, err
	}
	return &State{
		Host: h.Policy.Host, Worker: art.Worker, ArtifactDigest: digest, WorkerIRDigest: art.IRDigest,
		AdmissionDigest: admissionDigest, PolicyDigest: h.Policy.Digest(), Projection: proj,
		Registry: reg, Connections: conns,
		Home: h.Home, ForbidUnconfined: !h.Policy.AllowsUnconfined(), ConfinementMinimum: h.Policy.ConfinementMinimum(),
	}, nil
}

// CheckLive starts the server of every connection the plan uses, lists its
// tools and refuses any whose live inventory is not the verified one: a
// downstream schema, description or annotation change is drift, and
// resolution fails closed on it.
func CheckLive(ctx context.Context, st *State, plan *Plan, opts connector.Options) error {
	var refused blocking.List
	checked := map[string]bool{}
	for _, e := range plan.Capabilities {
		if checked[e.ConnectionID] {
			continue
		}
		checked[e.ConnectionID] = true
		rec := findConnection(st, e.ConnectionID)
		inv, err := connector.Probe(ctx, rec.Config, connection.StartOptions(st.Home, rec.Name, opts))
		switch {
		case err != nil && blocking.Refusals(err) == nil:
			return err
		case err != nil:
			// The probe's own code says why (a timeout, a confinement
			// refusal, a closed server): named, never its text.
			code := blocking.ConnectionVerifyFailed
			if rec.Config.Remote != nil {
				code = blocking.RemoteVerifyFailed
			}
			why := blocking.New(code, "connection %s did not answer (%s)", e.ConnectionID, blocking.Refusals(err)[0].Code)
			why.Cause = err
			refused = append(refused, why.At("", "capabilities."+e.CapabilityKey))
		case inv.Digest != e.InventoryDigest:
			refused = append(refused, blocking.New(blocking.ConnectionInventoryChanged, "connection %s lists other tools or schemas than revision %d verified", e.ConnectionID, e.ConnectionRevision).At("", "capabilities."+e.CapabilityKey))
		}
	}
	return refused.Err()
}

func findConnection(st *State, id string) *connection.Record {
	for _, l := range st.Connections {
		if l.Name == id {
			return l.Record
		}
	}
	panic("resolve: a plan names only connections of its state")
}

// ComputeOptions are the settings of Compute.
type ComputeOptions struct {
	Now time.Time
	// Probe starts each connection of the plan to compare its live tool
	// list with the verified one (CheckLive). Off only where a caller
	// checks liveness itself.
	Probe bool
	// Connector is how connections are started when probing.
	Connector connector.Options
}

// Compute loads the host state for the release rel, resolves it for req and,
// when asked, checks every connection of the plan live.
func Compute(ctx context.Context, h *host.Host, rel *oci.Release, req Request, opts ComputeOptions) (*Plan, *State, error) {
	st, err := Load(ctx, h, rel, opts.Now)
	if err != nil {
		return nil, nil, err
	}
	plan, err := Resolve(st, req)
	if err != nil {
		return nil, st, err
	}
	if opts.Probe {
		if err := CheckLive(ctx, st, plan, opts.Connector); err != nil {
			return nil, st, err
		}
	}
	return plan, st, nil
}
