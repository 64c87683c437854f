package bind

import (
	"context"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/schemas"
)

// StoreDir is the host's release store under $OA_HOME: one OCI image
// layout holding every bound release with its signatures and
// attestations, kept at bind time so that the coordinator serves with no
// network. Nothing in it is trusted for being there: every read of it is
// checked against the binding's digests.
const StoreDir = "releases"

// storeDir is the release store of h.
func storeDir(h *host.Host) string { return filepath.Join(h.Home, StoreDir) }

// Keep copies rel into the host's release store (oci.Keep: with its
// signatures, attestations and sigstore bundles, every byte held to the
// host's limits and checked against its digest; a damaged copy already
// there is repaired).
func Keep(ctx context.Context, h *host.Host, rel *oci.Release) error {
	return oci.Keep(ctx, rel.Target, rel.Descriptor, storeDir(h), h.Policy.ReadLimits())
}

// BindKept is Bind for rel, the binding recording rel's reference: once
// every check of the approval has passed, the release is kept in the
// host's release store (Keep), and only then is the binding written, so a
// bound release is served with the registry down. A release that cannot
// be kept binds nothing.
func BindKept(ctx context.Context, h *host.Host, rel *oci.Release, plan *resolve.Plan, a Approval) (*Binding, error) {
	if rel.Descriptor.Digest.String() != plan.ArtifactDigest {
		return nil, blocking.New(blocking.PlanDigestMismatch, "the release read is not the artifact the plan was resolved for")
	}
	return bind(ctx, h, rel.Ref.String(), rel.Ref.LayoutPath, plan, a, func() error { return Keep(ctx, h, rel) })
}

// BoundRelease is a binding's release opened for reading with its
// verified artifact. Stages that need more than the artifact (audit copies the
// release with its signatures) read from Target, never parse the
// reference again.
type BoundRelease struct {
	oci.Release
	Artifact *oci.Artifact
	// FromStore is true when the release was read from the host's
	// release store, false when from the bound reference.
	FromStore bool
	// StoreProblem, when the release was read from the bound reference,
	// is why the store's copy was not used: artifact_not_found (a binding
	// made before the store, or a store removed) or release_store_damaged.
	StoreProblem error
	// RefillProblem is why the store could not be filled from the bound
	// reference after StoreProblem; nil when it was.
	RefillProblem error
}

// OpenRelease reads the binding's release for a host stage under the
// host's limits (host.Policy.ReleaseOptions over transport). It reads the
// host's release store first, with no network: the store must hold the
// bound artifact, whose manifest, IR and every layer are read and checked
// against their digests (oci.Fetch). When the store's copy is missing or
// fails any check, the bound reference is read instead (it must still
// name the bound artifact, whose manifest and IR are verified and every
// other layer bound to the IR, oci.FetchBound) and the store is filled
// again from it. When both fail, the refusal is release_unavailable,
// followed by why the store's copy and why the reference failed.
func OpenRelease(ctx context.Context, h *host.Host, b *Binding, transport oci.OpenOptions) (*BoundRelease, error) {
	if b.releaseErr != nil {
		return nil, b.releaseErr
	}
	ref := b.release
	opts := h.Policy.ReleaseOptions(transport)
	kept, why := openStored(ctx, h, b, opts)
	if kept != nil {
		kept.Ref = ref
		return kept, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rel, err := openReference(ctx, b, ref, opts)
	if err != nil {
		if blocking.Refusals(err) == nil {
			return nil, err
		}
		refused := blocking.List{blocking.New(blocking.ReleaseUnavailable, "neither the host's kept copy nor the bound reference gives the bound artifact")}
		refused = append(refused, blocking.Refusals(why)...)
		return nil, append(refused, blocking.Refusals(err)...)
	}
	rel.StoreProblem = why
	rel.RefillProblem = Keep(ctx, h, &rel.Release)
	return rel, nil
}

// openStored reads the bound release from the host's release store,
// checking every blob against its digest. It returns nil and why (a
// refusal) when the store's copy cannot be used.
func openStored(ctx context.Context, h *host.Host, b *Binding, opts oci.OpenOptions) (*BoundRelease, error) {
	dg, err := digest.Parse(b.ArtifactDigest)
	if err != nil {
		return nil, blocking.New(blocking.ReleaseStoreDamaged, "the binding's artifact digest is not a digest")
	}
	rel, err := oci.OpenKept(ctx, storeDir(h), dg, opts)
	if err == nil && rel.Descriptor.Digest != dg {
		err = blocking.New(blocking.LayerDigestMismatch, "the kept copy resolves the bound digest to other content")
	}
	var art *oci.Artifact
	if err == nil {
		art, err = oci.Fetch(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	}
	switch {
	case err == nil:
		return &BoundRelease{Release: *rel, Artifact: art, FromStore: true}, nil
	case rel == nil && blocking.Has(err, blocking.ArtifactNotFound):
		return nil, blocking.New(blocking.ArtifactNotFound, "the host's release store does not hold the bound artifact")
	case blocking.Refusals(err) != nil:
		return nil, append(blocking.List{blocking.New(blocking.ReleaseStoreDamaged, "the kept copy fails its checks")}, blocking.Refusals(err)...)
	default:
		// A fault (an unreadable folder): named, never its text, which
		// carries local paths.
		return nil, blocking.New(blocking.ReleaseStoreDamaged, "the kept copy cannot be read")
	}
}

// openReference reads the bound release from the bound reference: it
// must still name the bound artifact, whose manifest and IR are verified
// and every other layer bound to the IR (oci.FetchBound).
func openReference(ctx context.Context, b *Binding, ref oci.Ref, opts oci.OpenOptions) (*BoundRelease, error) {
	rel, err := oci.OpenPinned(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	if rel.Descriptor.Digest.String() != b.ArtifactDigest {
		return nil, blocking.New(blocking.PlanDigestMismatch, "the bound reference no longer names the bound artifact")
	}
	art, err := oci.FetchBound(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	if err != nil {
		return nil, err
	}
	return &BoundRelease{Release: *rel, Artifact: art}, nil
}
