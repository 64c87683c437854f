package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/oa-dev/oa/blocking"
)

// remembering is a read-only target that fetches each piece of content
// from the target it wraps at most once: content is addressed by digest,
// so what was read and verified once is the same bytes every time.
type remembering struct {
	oras.ReadOnlyTarget
	mu   sync.Mutex
	seen map[digest.Digest][]byte
}

// Remember wraps t so that a manifest or blob read once (and verified
// against its descriptor) is served from memory after that. A command
// that resolves a reference and then reads the artifact pays one request
// for the manifest, not two.
func Remember(t oras.ReadOnlyTarget) oras.ReadOnlyTarget {
	return &remembering{ReadOnlyTarget: t, seen: map[digest.Digest][]byte{}}
}

// ReadLimits are the limits of the wrapped target.
func (r *remembering) ReadLimits() Limits { return LimitsOf(r.ReadOnlyTarget) }

func (r *remembering) recall(d digest.Digest) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.seen[d]
	return b, ok
}

func (r *remembering) keep(d digest.Digest, b []byte) {
	r.mu.Lock()
	r.seen[d] = b
	r.mu.Unlock()
}

// Fetch serves desc from memory, or reads it whole, verifies it against
// desc and remembers it.
func (r *remembering) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if b, ok := r.recall(desc.Digest); ok && int64(len(b)) == desc.Size {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	b, err := readBounded(ctx, r.ReadOnlyTarget, desc)
	if err != nil {
		return nil, err
	}
	r.keep(desc.Digest, b)
	return io.NopCloser(bytes.NewReader(b)), nil
}

// FetchReference keeps the wrapped target's one-request read of a
// reference (a registry's GET of a manifest by tag or digest).
func (r *remembering) FetchReference(ctx context.Context, reference string) (ocispec.Descriptor, io.ReadCloser, error) {
	rf, ok := r.ReadOnlyTarget.(registry.ReferenceFetcher)
	if !ok {
		desc, err := r.Resolve(ctx, reference)
		if err != nil {
			return ocispec.Descriptor{}, nil, err
		}
		rc, err := r.Fetch(ctx, desc)
		return desc, rc, err
	}
	desc, rc, err := rf.FetchReference(ctx, reference)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	defer rc.Close()
	if err := r.ReadLimits().Check(desc); err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	r.keep(desc.Digest, b)
	return desc, io.NopCloser(bytes.NewReader(b)), nil
}

// ResolveOnce resolves reference on a remembering target by reading its
// manifest in one request (oras.FetchBytes), so the read that follows is
// served from memory; on other targets it is Resolve.
func ResolveOnce(ctx context.Context, target oras.ReadOnlyTarget, reference string) (ocispec.Descriptor, error) {
	if _, ok := target.(*remembering); !ok {
		return Resolve(ctx, target, reference)
	}
	limit := LimitsOf(target).ManifestBytes
	desc, _, err := oras.FetchBytes(ctx, target, reference, oras.FetchBytesOptions{MaxBytes: limit})
	if errors.Is(err, errdef.ErrNotFound) {
		return ocispec.Descriptor{}, blocking.New(blocking.ArtifactNotFound, "nothing is stored under that reference")
	}
	if r := sizeRefusal(err, limit); r != nil {
		return ocispec.Descriptor{}, r
	}
	if r := blocking.Refusals(err); r != nil {
		return ocispec.Descriptor{}, err
	}
	if r := resolveRefusal(err); r != nil {
		return ocispec.Descriptor{}, r
	}
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolving: %w", err)
	}
	return desc, nil
}
