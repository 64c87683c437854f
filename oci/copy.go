package oci

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
)

// CopyOptions adjust CopySigned.
type CopyOptions struct {
	// Tag tags the artifact in the destination when not empty.
	Tag string
	// RequireSigned refuses copy_unsigned, before anything is written,
	// when the source holds no signature for the artifact in any form.
	RequireSigned bool
}

// CopyResult says what CopySigned carried.
type CopyResult struct {
	// Parts names what was copied: "artifact", then "att" and "sig" (the
	// legacy tags) and "bundles" (sigstore bundle referrers) when present.
	Parts []string `json:"copied"`
	// Signatures and Attestations count the signatures and attestations
	// copied, in every form, as they claim to be (nothing is verified: a
	// copy carries what is there).
	Signatures   int `json:"signatures"`
	Attestations int `json:"attestations"`
	// Bundles counts the sigstore bundles among what was copied, including
	// any that cannot be read (counted neither as a signature nor as an
	// attestation).
	Bundles int `json:"bundles"`
}

// Copy parts.
const (
	copiedArtifact = "artifact"
	copiedSig      = "sig"
	copiedAtt      = "att"
	copiedBundles  = "bundles"
)

// CopySigned copies the artifact desc from src to dst with every signature
// and attestation src holds for it, in both forms cosign writes: the
// `sha256-<hex>.sig` and `.att` tags (which a plain graph copy would leave
// behind), and the sigstore bundles that refer to it (which dst lists
// through its referrers API, its referrers tag, or its layout). Everything
// is read and counted before anything is written, and every byte copied
// is checked against its digest.
func CopySigned(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, desc ocispec.Descriptor, opts CopyOptions) (*CopyResult, error) {
	subject, err := fullDescriptor(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	plan, err := planCopy(ctx, src, subject)
	if err != nil {
		return nil, err
	}
	if opts.RequireSigned && plan.res.Signatures == 0 {
		return nil, blocking.New(blocking.CopyUnsigned, "the source holds no signature for the digest")
	}
	if err := copyGraph(ctx, src, dst, subject); err != nil {
		return nil, err
	}
	if opts.Tag != "" {
		if err := dst.Tag(ctx, subject, opts.Tag); err != nil {
			return nil, fmt.Errorf("tagging: %w", err)
		}
	}
	for _, t := range plan.tags {
		if err := copyGraph(ctx, src, dst, t.desc); err != nil {
			return nil, err
		}
		if err := dst.Tag(ctx, t.desc, t.name); err != nil {
			return nil, fmt.Errorf("tagging %s: %w", t.name, err)
		}
	}
	for _, m := range plan.bundles {
		if err := copyGraph(ctx, src, dst, m); err != nil {
			return nil, err
		}
	}
	return &plan.res, nil
}

// CountCopy says what CopySigned would carry of the artifact desc from
// src, without writing anything: so that a caller can refuse before it
// opens (or creates) the destination.
func CountCopy(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor) (*CopyResult, error) {
	subject, err := fullDescriptor(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	plan, err := planCopy(ctx, src, subject)
	if err != nil {
		return nil, err
	}
	return &plan.res, nil
}

// fullDescriptor resolves desc's digest in src when desc lacks the media
// type or size (a layout finds referrers by the whole descriptor).
func fullDescriptor(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	if err := checkSubject(desc); err != nil {
		return ocispec.Descriptor{}, err
	}
	if desc.MediaType != "" && desc.Size > 0 {
		return desc, nil
	}
	full, err := src.Resolve(ctx, desc.Digest.String())
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return ocispec.Descriptor{}, blocking.New(blocking.ArtifactNotFound, "the source does not hold the digest")
	case resolveRefusal(err) != nil:
		return ocispec.Descriptor{}, resolveRefusal(err)
	case err != nil:
		return ocispec.Descriptor{}, fmt.Errorf("resolving the artifact: %w", err)
	case full.Digest != desc.Digest:
		return ocispec.Descriptor{}, blocking.New(blocking.LayerDigestMismatch, "the source resolves the digest to other content")
	}
	return full, nil
}

// copyPlan is what a copy will carry.
type copyPlan struct {
	tags    []namedManifest
	bundles []ocispec.Descriptor
	res     CopyResult
}

// namedManifest is a legacy tag and the manifest it names.
type namedManifest struct {
	name string
	desc ocispec.Descriptor
}

// planCopy finds the legacy tags and the bundles for subject in src and
// counts what they hold.
func planCopy(ctx context.Context, src oras.ReadOnlyTarget, subject ocispec.Descriptor) (*copyPlan, error) {
	p := &copyPlan{res: CopyResult{Parts: []string{copiedArtifact}}}
	for _, legacy := range []struct {
		part, tag, mediaType string
		count                *int
	}{
		{copiedAtt, AttestationTag(subject.Digest), DSSEMediaType, &p.res.Attestations},
		{copiedSig, SignatureTag(subject.Digest), SimpleSigningMediaType, &p.res.Signatures},
	} {
		desc, n, found, err := countCosignLayers(ctx, src, legacy.tag, legacy.mediaType)
		if err != nil {
			return nil, err
		}
		if found {
			p.tags = append(p.tags, namedManifest{legacy.tag, desc})
			p.res.Parts = append(p.res.Parts, legacy.part)
			*legacy.count += n
		}
	}
	bundles, err := readBundles(ctx, src, subject)
	if err != nil {
		return nil, err
	}
	seen := map[digest.Digest]bool{}
	for _, b := range bundles {
		switch b.kind() {
		case bundleSignature:
			p.res.Signatures++
		case bundleAttestation:
			p.res.Attestations++
		}
		p.res.Bundles++
		if !seen[b.manifest.Digest] {
			seen[b.manifest.Digest] = true
			p.bundles = append(p.bundles, b.manifest)
		}
	}
	if len(p.bundles) > 0 {
		p.res.Parts = append(p.res.Parts, copiedBundles)
	}
	sort.Strings(p.res.Parts[1:])
	return p, nil
}

// countCosignLayers reads the cosign manifest tagged tag (bounded, digest
// checked) and counts its layers of mediaType, without reading them.
func countCosignLayers(ctx context.Context, src oras.ReadOnlyTarget, tag, mediaType string) (ocispec.Descriptor, int, bool, error) {
	desc, raw, err := oras.FetchBytes(ctx, src, tag, oras.FetchBytesOptions{MaxBytes: maxCosignManifestSize})
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return ocispec.Descriptor{}, 0, false, nil
	case errors.Is(err, errdef.ErrSizeExceedsLimit):
		return ocispec.Descriptor{}, 0, false, blocking.New(blocking.CopySignatureTooLarge, "a cosign tag names a manifest larger than any cosign writes")
	case err != nil:
		return ocispec.Descriptor{}, 0, false, copyError(err)
	}
	layers, _ := parseCosignManifest(desc, raw)
	n := 0
	for _, l := range layers {
		if l.MediaType == mediaType {
			n++
		}
	}
	return desc, n, true, nil
}

// copyGraph copies the graph rooted at desc (skipping what dst has),
// every byte checked against its digest.
func copyGraph(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, desc ocispec.Descriptor) error {
	lim := LimitsOf(src)
	if err := oras.CopyGraph(ctx, src, dst, desc, copyOptions(lim)); err != nil {
		if r := sizeRefusal(err, lim.ManifestBytes); r != nil {
			return r
		}
		if blocking.Refusals(err) != nil {
			return err
		}
		return copyError(err)
	}
	return nil
}
