package signing

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
)

// WriteOptions say how a signature or an attestation is written: by whom,
// naming the subject how, and in which of cosign's two formats. One value
// for Sign, Attest and AttestConformance, as sigstore-go's verify.NewPolicy
// takes one policy, rather than a pair of functions per format.
type WriteOptions struct {
	// Signer signs the payload; it is required.
	Signer *Signer
	// Repository is the docker-reference that names the subject in the
	// payload (for example "127.0.0.1:5000/oa/clinic", or
	// "oa.local/clinic" for a layout): verifiers do not check it, but it
	// must be a valid image name.
	Repository string
	// Bundle writes cosign v3's default format, a sigstore bundle
	// referrer of the subject (DSSE, in-toto v1 statement), instead of
	// cosign's legacy tag (sha256-<hex>.sig or .att). The subject must
	// then be the whole descriptor (media type, digest, size).
	Bundle bool
}

// Sign writes a publisher signature over the manifest subject into target,
// as cosign sign --key does: by default in cosign's legacy format, a
// simple-signing payload as a layer of the sha256-<hex>.sig manifest
// (appended to, the tag moved, a signature by the same key over the same
// payload not added twice, the superseded manifest deleted when target can
// delete); with opts.Bundle, as an in-toto statement of predicate type
// CosignSignPredicateType in a sigstore bundle referrer. It returns the
// descriptor of the manifest written or tagged.
func Sign(ctx context.Context, target oras.Target, subject ocispec.Descriptor, opts WriteOptions) (ocispec.Descriptor, error) {
	if opts.Bundle {
		return signBundle(ctx, target, opts.Repository, subject, opts.Signer)
	}
	return signTag(ctx, target, opts.Repository, subject, opts.Signer)
}

// Attest writes an attestation over the manifest subject into target, as
// cosign attest --key --type predicateType does: an in-toto statement of
// predicate (a JSON object; predicateType a URI, else
// attestation_predicate_invalid) in a DSSE envelope, by default as a layer
// of the sha256-<hex>.att manifest (appended to like Sign's), with
// opts.Bundle in a sigstore bundle referrer. It returns the descriptor of
// the manifest written or tagged.
func Attest(ctx context.Context, target oras.Target, subject ocispec.Descriptor, predicateType string, predicate []byte, opts WriteOptions) (ocispec.Descriptor, error) {
	if opts.Bundle {
		return attestBundle(ctx, target, opts.Repository, subject, predicateType, predicate, opts.Signer)
	}
	return attestTag(ctx, target, opts.Repository, subject, predicateType, predicate, opts.Signer)
}
