package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
)

// A kept store is an OCI image layout that holds releases a host serves
// from without the network (bind keeps each bound release in one under
// $OA_HOME). It is an ordinary layout, read with the same bounded reads
// as any other (OpenKept), and written by Keep: the release with what
// cosign stores beside it, where a blob already present is read again
// and checked against its digest before it is trusted to be there.

// Keep copies the release desc from src into the OCI image layout at dir
// (made when missing), with the signatures, attestations and sigstore
// bundles src holds for it (PlanCopy), every byte read held to lim and
// checked against its digest. A blob the layout already holds is read
// and checked too: one that is damaged (changed, cut short, unreadable)
// is removed and copied again, so Keep repairs a kept copy that failed
// its digests.
func Keep(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor, dir string, lim Limits) error {
	plan, err := PlanCopy(ctx, src, desc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the release store: %w", err)
	}
	l, err := openLayout(dir, lim)
	if err != nil {
		return err
	}
	defer l.dir.Close()
	return plan.Copy(ctx, src, &checkedLayout{layout: l}, "")
}

// OpenKept opens the release dgst in the OCI image layout at dir for
// reading, as OpenPinned opens a reference: nothing is created, and a
// store or release that is not there is artifact_not_found. Only opts'
// limits apply (a layout has no transport).
func OpenKept(ctx context.Context, dir string, dgst digest.Digest, opts OpenOptions) (*Release, error) {
	ref := Ref{Repository: layoutRepository(dir), Digest: dgst, Layout: dir, LayoutPath: true}
	return OpenPinned(ctx, ref, OpenOptions{Limits: opts.Limits, RequestTimeout: opts.RequestTimeout, OperationTimeout: opts.OperationTimeout})
}

// checkedLayout is a layout written by Keep: a blob counts as present
// only when it reads back as its descriptor says.
type checkedLayout struct {
	*layout
}

// Exists reports whether desc's blob is stored intact, and for a
// manifest whether everything it names (config, layers, child manifests)
// is too: oras-go skips what a destination says it has, with all it
// names. A stored blob that does not read back as desc (size, digest, not
// a regular file, over the limits) is removed, so the copy that follows
// writes it again; an intact manifest naming a damaged blob is kept and
// reported absent, so the copy walks into it.
func (c *checkedLayout) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	ok, err := c.layout.Exists(ctx, desc)
	if err != nil || !ok {
		return false, err
	}
	raw, err := readBounded(ctx, c.layout, desc)
	if err == nil {
		if !isManifest(desc.MediaType) {
			return true, nil
		}
		return c.namedExist(ctx, raw)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	name, err := blobName(desc.Digest)
	if err != nil {
		return false, err
	}
	if err := c.dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("removing a damaged blob from the release store: %w", err)
	}
	return false, nil
}

// namedExist reports whether every blob the manifest raw names, but its
// subject (the release a signature refers to, copied on its own), is
// stored intact.
func (c *checkedLayout) namedExist(ctx context.Context, raw []byte) (bool, error) {
	var m struct {
		Config    *ocispec.Descriptor  `json:"config"`
		Layers    []ocispec.Descriptor `json:"layers"`
		Manifests []ocispec.Descriptor `json:"manifests"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return false, nil
	}
	named := append(slices.Clone(m.Layers), m.Manifests...)
	if m.Config != nil {
		named = append(named, *m.Config)
	}
	for _, d := range named {
		if ok, err := c.Exists(ctx, d); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}
