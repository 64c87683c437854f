package signing

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
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

// CopySigned copies the artifact desc from src to dst with every signature
// and attestation src holds for it, in both forms cosign writes (oci's
// CopyPlan: the `sha256-<hex>.sig` and `.att` tags, which a plain graph
// copy would leave behind, and the sigstore bundles that refer to it), and
// counts them. Everything is read and counted before anything is written,
// and every byte copied is checked against its digest.
func CopySigned(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, desc ocispec.Descriptor, opts CopyOptions) (*CopyResult, error) {
	plan, err := oci.PlanCopy(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	res := countCopy(plan)
	if opts.RequireSigned && res.Signatures == 0 {
		return nil, blocking.New(blocking.CopyUnsigned, "the source holds no signature for the digest")
	}
	if err := plan.Copy(ctx, src, dst, opts.Tag); err != nil {
		return nil, err
	}
	return res, nil
}

// CountCopy says what CopySigned would carry of the artifact desc from
// src, without writing anything: so that a caller can refuse before it
// opens (or creates) the destination.
func CountCopy(ctx context.Context, src oras.ReadOnlyTarget, desc ocispec.Descriptor) (*CopyResult, error) {
	plan, err := oci.PlanCopy(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	return countCopy(plan), nil
}

// countCopy counts the signatures and attestations plan carries, by what
// each layer and bundle claims to be.
func countCopy(plan *oci.CopyPlan) *CopyResult {
	res := &CopyResult{
		Parts:        plan.Parts(),
		Attestations: countLayers(plan.Attestations, oci.DSSEMediaType),
		Signatures:   countLayers(plan.Signatures, oci.SimpleSigningMediaType),
	}
	for _, r := range plan.Bundles {
		switch bundleOf(r).kind() {
		case bundleSignature:
			res.Signatures++
		case bundleAttestation:
			res.Attestations++
		}
		res.Bundles++
	}
	return res
}

// countLayers counts m's layers of mediaType, without reading them.
func countLayers(m oci.CosignManifest, mediaType string) int {
	n := 0
	for _, l := range m.Layers {
		if l.MediaType == mediaType {
			n++
		}
	}
	return n
}
