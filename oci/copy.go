package oci

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
)

// CopyPlan is what a copy of one artifact carries: the artifact, the
// manifests cosign's legacy tags name for it and the sigstore bundles that
// refer to it, all read (bounded, digest-checked) before anything is
// written. What they claim to be is not decided here: package signing
// counts signatures and attestations.
type CopyPlan struct {
	// Subject is the artifact's whole descriptor.
	Subject ocispec.Descriptor
	// Attestations and Signatures are the manifests tagged
	// AttestationTag(Subject.Digest) and SignatureTag(Subject.Digest).
	Attestations, Signatures CosignManifest
	// Bundles are the sigstore bundles that refer to Subject, as Referrers
	// read them.
	Bundles []Referrer
}

// Copy parts.
const (
	copiedArtifact = "artifact"
	copiedSig      = "sig"
	copiedAtt      = "att"
	copiedBundles  = "bundles"
)

// PlanCopy reads what a copy of the artifact desc from src carries,
// without writing anything: so that a caller can count it, and refuse,
// before it opens (or creates) the destination.
func PlanCopy(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor) (*CopyPlan, error) {
	subject, err := fullDescriptor(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	p := &CopyPlan{Subject: subject}
	if p.Attestations, err = readCopiedTag(ctx, src, AttestationTag(subject.Digest)); err != nil {
		return nil, err
	}
	if p.Signatures, err = readCopiedTag(ctx, src, SignatureTag(subject.Digest)); err != nil {
		return nil, err
	}
	if p.Bundles, err = Referrers(ctx, src, subject, BundleMediaType); err != nil {
		return nil, err
	}
	return p, nil
}

// Parts names what the plan carries: "artifact", then "att" and "sig"
// (the legacy tags) and "bundles" (sigstore bundle referrers) when present.
func (p *CopyPlan) Parts() []string {
	parts := []string{copiedArtifact}
	if p.Attestations.Found {
		parts = append(parts, copiedAtt)
	}
	if len(p.Bundles) > 0 {
		parts = append(parts, copiedBundles)
	}
	if p.Signatures.Found {
		parts = append(parts, copiedSig)
	}
	return parts
}

// Copy carries the plan from src to dst: the artifact (tagged tag when
// not empty), the legacy tags and the bundle manifests, skipping what dst
// has, every byte checked against its digest.
func (p *CopyPlan) Copy(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, tag string) error {
	if err := copyGraph(ctx, src, dst, p.Subject); err != nil {
		return err
	}
	if tag != "" {
		if err := dst.Tag(ctx, p.Subject, tag); err != nil {
			return fmt.Errorf("tagging: %w", err)
		}
	}
	for _, t := range []struct {
		name string
		m    CosignManifest
	}{{AttestationTag(p.Subject.Digest), p.Attestations}, {SignatureTag(p.Subject.Digest), p.Signatures}} {
		if !t.m.Found {
			continue
		}
		if err := copyGraph(ctx, src, dst, t.m.Descriptor); err != nil {
			return err
		}
		if err := dst.Tag(ctx, t.m.Descriptor, t.name); err != nil {
			return fmt.Errorf("tagging %s: %w", t.name, err)
		}
	}
	seen := map[digest.Digest]bool{}
	for _, b := range p.Bundles {
		if seen[b.Manifest.Digest] {
			continue
		}
		seen[b.Manifest.Digest] = true
		if err := copyGraph(ctx, src, dst, b.Manifest); err != nil {
			return err
		}
	}
	return nil
}

// fullDescriptor resolves desc's digest in src when desc lacks the media
// type or size (a layout finds referrers by the whole descriptor).
func fullDescriptor(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	if err := CheckSubject(desc); err != nil {
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

// readCopiedTag reads the cosign manifest tagged tag for a copy. One
// larger than any cosign writes is refused: a copy cannot carry it intact
// and leaving it behind would lose what it holds.
func readCopiedTag(ctx context.Context, src oras.ReadOnlyTarget, tag string) (CosignManifest, error) {
	m, err := ReadCosignManifest(ctx, src, tag)
	switch {
	case err != nil:
		return CosignManifest{}, copyError(err)
	case m.TooLarge:
		return CosignManifest{}, blocking.New(blocking.CopySignatureTooLarge, "a cosign tag names a manifest larger than any cosign writes")
	}
	return m, nil
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
