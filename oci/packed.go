package oci

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
)

// packed is an artifact packed in this process, as the source oras.Copy
// sends from: its blobs and manifest by digest, and the tag naming the
// manifest. oras-go's memory.Store would read every blob again into a
// copy of its own through a growing buffer (about three times the
// artifact's bytes for a large skill doc); these bytes were made and
// digested here, so they are handed out as they are.
type packed struct {
	blobs    map[digest.Digest][]byte
	tag      string
	manifest ocispec.Descriptor
}

// newPacked holds layers, the empty config and the manifest bytes
// described by manifest, with tag naming the manifest.
func newPacked(manifest ocispec.Descriptor, manifestBytes []byte, layers []Layer, tag string) *packed {
	p := &packed{blobs: map[digest.Digest][]byte{manifest.Digest: manifestBytes}, tag: tag, manifest: manifest}
	for _, l := range layers {
		p.blobs[l.Descriptor.Digest] = l.Data
	}
	return p
}

// Fetch serves the blob d names, held to d's size.
func (p *packed) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	data, ok := p.blobs[d.Digest]
	if !ok || int64(len(data)) != d.Size {
		return nil, fmt.Errorf("%s: %w", d.Digest, errdef.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Exists reports whether the blob d names is held.
func (p *packed) Exists(_ context.Context, d ocispec.Descriptor) (bool, error) {
	data, ok := p.blobs[d.Digest]
	return ok && int64(len(data)) == d.Size, nil
}

// Resolve resolves the tag (or the manifest's digest) to the manifest.
func (p *packed) Resolve(_ context.Context, reference string) (ocispec.Descriptor, error) {
	if (p.tag != "" && reference == p.tag) || reference == p.manifest.Digest.String() {
		return p.manifest, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", reference, errdef.ErrNotFound)
}
