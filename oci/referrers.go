package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/oa-dev/oa/blocking"
)

// Bounds on what one look-up reads of the referrers of a subject: past
// them, more are ignored (someone who can push could hide a signature
// behind junk, but never forge one). A bundle manifest is about 1 KiB; a
// bundle is a few KiB unless an attestation carries a large predicate.
const (
	maxReferrers            = 64
	maxReferrerManifestSize = 256 << 10
	maxReferrerBytes        = 64 << 20
	// A listing is bounded in pages and entries seen, matching or not: a
	// registry that answers every page with another Link: rel="next"
	// (or a repository flooded with other referrers) is refused
	// referrers_too_many rather than followed for ever.
	maxReferrerPages   = 64
	maxReferrerEntries = 4096
)

// Referrer is one manifest that names a subject as its subject, with its
// layer of the manifest's own artifact type (as a sigstore bundle manifest
// holds its bundle), read and checked against their digests but not
// believed.
type Referrer struct {
	// Manifest is the referrer manifest, Layer its layer.
	Manifest, Layer ocispec.Descriptor
	// Data is the layer's bytes; nil when TooLarge is set.
	Data []byte
	// TooLarge is the refusal for a layer over the target's size limit,
	// which was not read.
	TooLarge error
}

// Referrers reads every manifest of artifactType whose subject is
// subject, with its layer of that type, checking every digest: through a
// registry's referrers API or referrers tag (oras-go picks), or a layout's
// predecessors of subject. Referrers of another kind, or whose manifest
// names another subject, are skipped; a listed manifest that is gone is
// skipped too (a stale referrers tag), while one whose bytes do not match
// its digest refuses layer_digest_mismatch. At most 64 referrers and 64
// MiB of layers are read.
func Referrers(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor, artifactType string) ([]Referrer, error) {
	listed, err := listReferrers(ctx, target, subject, artifactType)
	if err != nil {
		return nil, err
	}
	var out []Referrer
	budget := int64(maxReferrerBytes)
	lim := LimitsOf(target)
	for _, r := range listed {
		l, ok, err := readReferrerManifest(ctx, target, r, subject.Digest, artifactType)
		if err != nil {
			return nil, err
		}
		if !ok || l.Size > budget {
			continue
		}
		if err := lim.Check(l); err != nil {
			out = append(out, Referrer{Manifest: r, Layer: l, TooLarge: err})
			continue
		}
		budget -= l.Size
		raw, err := FetchReferenced(ctx, target, l)
		if err != nil {
			return nil, err
		}
		out = append(out, Referrer{Manifest: r, Layer: l, Data: raw})
	}
	return out, nil
}

// errEnoughReferrers stops a referrers listing at maxReferrers;
// errTooManyReferrers at maxReferrerPages or maxReferrerEntries.
var (
	errEnoughReferrers  = errors.New("enough referrers")
	errTooManyReferrers = errors.New("too many referrers")
)

// listReferrers lists the manifests that may be referrers of
// artifactType for subject. At most maxReferrers.
func listReferrers(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	if r, ok := target.(*remembering); ok {
		target = r.ReadOnlyTarget
	}
	var out []ocispec.Descriptor
	seen := 0
	keep := func(d ocispec.Descriptor) error {
		if seen++; seen > maxReferrerEntries {
			return errTooManyReferrers
		}
		if d.MediaType != ocispec.MediaTypeImageManifest || (d.ArtifactType != "" && d.ArtifactType != artifactType) {
			return nil
		}
		if len(out) == maxReferrers {
			return errEnoughReferrers
		}
		out = append(out, d)
		return nil
	}
	var err error
	switch t := target.(type) {
	case registry.ReferrerLister:
		pages := 0
		err = t.Referrers(ctx, subject, "", func(page []ocispec.Descriptor) error {
			if pages++; pages > maxReferrerPages {
				return errTooManyReferrers
			}
			for _, d := range page {
				if err := keep(d); err != nil {
					return err
				}
			}
			return nil
		})
	case content.ReadOnlyGraphStorage:
		var preds []ocispec.Descriptor
		preds, err = t.Predecessors(ctx, subject)
		for _, d := range preds {
			if err == nil {
				err = keep(d)
			}
		}
	}
	switch {
	case err == nil, errors.Is(err, errEnoughReferrers), errors.Is(err, errdef.ErrNotFound):
		return out, nil
	case sizeRefusal(err, LimitsOf(target).ManifestBytes) != nil:
		// The referrers tag's index, over the limit by its Content-Length.
		return nil, sizeRefusal(err, LimitsOf(target).ManifestBytes)
	case errors.Is(err, errTooManyReferrers):
		return nil, blocking.New(blocking.ReferrersTooMany, "the listing went past %d pages or %d entries", maxReferrerPages, maxReferrerEntries)
	case blocking.Refusals(err) != nil:
		return nil, err
	case Tampered(err):
		return nil, blocking.New(blocking.LayerDigestMismatch, "the referrers index does not match its digest")
	default:
		return nil, fmt.Errorf("listing referrers: %w", err)
	}
}

// readReferrerManifest reads the manifest desc names and returns its
// layer of artifactType (the first, as cosign writes one) when it is a
// manifest of artifactType for subject (ok false otherwise). A listed
// manifest that is not stored is not one (a stale referrers tag).
func readReferrerManifest(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor, subject digest.Digest, artifactType string) (ocispec.Descriptor, bool, error) {
	if desc.Size > maxReferrerManifestSize {
		return ocispec.Descriptor{}, false, nil
	}
	raw, err := readBounded(ctx, target, desc)
	switch {
	case transportRefusal(err) != nil:
		// The registry stalled or refused: the listing cannot be trusted
		// to be whole.
		return ocispec.Descriptor{}, false, err
	case errors.Is(err, errdef.ErrNotFound), blocking.Refusals(err) != nil:
		// Missing, or over the manifest limit: not a referrer oa reads.
		return ocispec.Descriptor{}, false, nil
	case Tampered(err):
		return ocispec.Descriptor{}, false, blocking.New(blocking.LayerDigestMismatch, "a bundle manifest does not match its digest")
	case err != nil:
		return ocispec.Descriptor{}, false, fmt.Errorf("fetching a referrer: %w", err)
	}
	var m ocispec.Manifest
	if json.Unmarshal(raw, &m) != nil {
		return ocispec.Descriptor{}, false, nil
	}
	if m.ArtifactType != artifactType || m.Subject == nil || m.Subject.Digest != subject {
		return ocispec.Descriptor{}, false, nil
	}
	for _, l := range m.Layers {
		if l.MediaType == artifactType {
			return l, true, nil
		}
	}
	return ocispec.Descriptor{}, false, nil
}

// FetchReferenced reads desc, which a manifest already read names (a
// signature layer, a bundle), bounded by the target's limits and verified
// against its size and digest. Content that does not match its
// descriptor, or is missing though a manifest names it, refuses
// layer_digest_mismatch.
func FetchReferenced(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor) ([]byte, error) {
	b, err := readBounded(ctx, target, desc)
	switch {
	case err == nil:
		return b, nil
	case blocking.Refusals(err) != nil:
		return nil, err
	case errors.Is(err, errdef.ErrNotFound):
		return nil, blocking.New(blocking.LayerDigestMismatch, "cosign content %s is missing", desc.Digest)
	case Tampered(err):
		return nil, blocking.New(blocking.LayerDigestMismatch, "cosign content %s does not match its digest", desc.Digest)
	default:
		return nil, fmt.Errorf("fetching cosign content: %w", err)
	}
}
