package oci

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
)

// Release is a release reference opened for reading and resolved once:
// the one handle a stage reads a release through, so the reference is
// parsed once and opened with one set of options.
type Release struct {
	// Ref is the reference, pinned to a digest.
	Ref Ref
	// Target is where the release is read from; what was read is
	// remembered (Remember), so the fetch that follows the resolve does
	// not ask the source again.
	Target oras.ReadOnlyTarget
	// Descriptor is the release manifest's descriptor.
	Descriptor ocispec.Descriptor
}

// OpenPinned opens ref's target under opts and resolves it in one
// manifest request (ResolveOnce). A reference without a digest is refused
// reference_not_digest, naming the digest its tag resolves to now.
func OpenPinned(ctx context.Context, ref Ref, opts OpenOptions) (*Release, error) {
	target, err := Open(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	remembered := Remember(target)
	desc, err := ResolveOnce(ctx, remembered, ref.Reference())
	if err != nil {
		return nil, err
	}
	if err := ref.RequireDigest(desc.Digest); err != nil {
		return nil, err
	}
	return &Release{Ref: ref, Target: remembered, Descriptor: desc}, nil
}
