package oci

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"

	"github.com/oa-dev/oa/blocking"
)

// The sigstore bundle format, cosign v3's default: each signature or
// attestation is a protobuf-JSON bundle, the one layer of an image-spec 1.1
// manifest whose artifactType is the bundle media type and whose subject is
// the signed manifest. A registry lists it through the referrers API, or
// under the `sha256-<hex>` referrers tag where it has none; a layout
// through the subject links of its manifests.
const (
	// BundleMediaType is the artifact type of a bundle manifest and the
	// media type of its layer.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// CosignSignPredicateType is the predicate type of the in-toto
	// statement `cosign sign` puts in a bundle: a signature, not an
	// attestation.
	CosignSignPredicateType = "https://sigstore.dev/cosign/sign/v1"
)

// Forms a signature or attestation is stored in, as results and chain
// links name them.
const (
	// FormLegacy is cosign's `sha256-<hex>.sig` / `.att` tag.
	FormLegacy = "legacy"
	// FormBundle is a sigstore bundle referrer.
	FormBundle = "bundle"
)

// Bounds on what one check reads of the referrers of a subject: past
// them, more are ignored (someone who can push could hide a signature
// behind junk, but never forge one). A bundle manifest is about 1 KiB; a
// bundle is a few KiB unless an attestation carries a large predicate.
const (
	maxBundleReferrers    = 64
	maxBundleManifestSize = 256 << 10
	maxBundleBytes        = 64 << 20
)

// sigBundle is one bundle referring to a subject, read and digest-checked
// but not verified.
type sigBundle struct {
	// manifest is the bundle manifest, layer its bundle layer.
	manifest, layer ocispec.Descriptor
	// parsed is the decoded bundle; nil when the layer is not a valid one
	// (it then verifies with no key).
	parsed *bundle.Bundle
	// tooLarge is the refusal for a bundle layer over the size limit,
	// which was not read (parsed is nil).
	tooLarge error
}

// readBundles reads every sigstore bundle whose manifest names subject as
// its subject, checking every digest. Referrers of another kind, or whose
// manifest names another subject, are skipped; a listed manifest that is
// gone is skipped too (a stale referrers tag), while one whose bytes do not
// match its digest refuses layer_digest_mismatch.
func readBundles(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor) ([]sigBundle, error) {
	referrers, err := bundleReferrers(ctx, target, subject)
	if err != nil {
		return nil, err
	}
	var out []sigBundle
	budget := int64(maxBundleBytes)
	lim := LimitsOf(target)
	for _, r := range referrers {
		l, ok, err := readBundleManifest(ctx, target, r, subject.Digest)
		if err != nil {
			return nil, err
		}
		if !ok || l.Size > budget {
			continue
		}
		if err := lim.Check(l); err != nil {
			out = append(out, sigBundle{manifest: r, layer: l, tooLarge: err})
			continue
		}
		budget -= l.Size
		raw, err := fetchCosign(ctx, target, l)
		if err != nil {
			return nil, err
		}
		out = append(out, sigBundle{manifest: r, layer: l, parsed: parseBundle(raw)})
	}
	return out, nil
}

// errEnoughReferrers stops a referrers listing at maxBundleReferrers.
var errEnoughReferrers = errors.New("enough referrers")

// bundleReferrers lists the manifests that may be bundles for subject:
// through the registry's referrers API or referrers tag (oras-go picks),
// or a layout's predecessors of subject. At most maxBundleReferrers.
func bundleReferrers(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	if r, ok := target.(*remembering); ok {
		target = r.ReadOnlyTarget
	}
	var out []ocispec.Descriptor
	keep := func(d ocispec.Descriptor) error {
		if d.MediaType != ocispec.MediaTypeImageManifest || (d.ArtifactType != "" && d.ArtifactType != BundleMediaType) {
			return nil
		}
		if len(out) == maxBundleReferrers {
			return errEnoughReferrers
		}
		out = append(out, d)
		return nil
	}
	var err error
	switch t := target.(type) {
	case registry.ReferrerLister:
		err = t.Referrers(ctx, subject, "", func(page []ocispec.Descriptor) error {
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
	case tampered(err):
		return nil, blocking.New(blocking.LayerDigestMismatch, "the referrers index does not match its digest")
	default:
		return nil, fmt.Errorf("listing referrers: %w", err)
	}
}

// readBundleManifest reads the manifest desc names and returns its bundle
// layer (the first, as cosign writes one) when it is a bundle manifest for
// subject (ok false otherwise). A listed manifest that is not stored is
// not one (a stale referrers tag).
func readBundleManifest(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor, subject digest.Digest) (ocispec.Descriptor, bool, error) {
	if desc.Size > maxBundleManifestSize {
		return ocispec.Descriptor{}, false, nil
	}
	raw, err := readBounded(ctx, target, desc)
	switch {
	case errors.Is(err, errdef.ErrNotFound), blocking.Refusals(err) != nil:
		// Missing, or over the manifest limit: not a bundle oa reads.
		return ocispec.Descriptor{}, false, nil
	case tampered(err):
		return ocispec.Descriptor{}, false, blocking.New(blocking.LayerDigestMismatch, "a bundle manifest does not match its digest")
	case err != nil:
		return ocispec.Descriptor{}, false, fmt.Errorf("fetching a referrer: %w", err)
	}
	var m ocispec.Manifest
	if json.Unmarshal(raw, &m) != nil {
		return ocispec.Descriptor{}, false, nil
	}
	if m.ArtifactType != BundleMediaType || m.Subject == nil || m.Subject.Digest != subject {
		return ocispec.Descriptor{}, false, nil
	}
	for _, l := range m.Layers {
		if l.MediaType == BundleMediaType {
			return l, true, nil
		}
	}
	return ocispec.Descriptor{}, false, nil
}

// parseBundle decodes a bundle with sigstore-go, which checks its shape
// (media type, content, verification material). nil when it is not one.
func parseBundle(raw []byte) *bundle.Bundle {
	if raw == nil {
		return nil
	}
	var b bundle.Bundle
	if b.UnmarshalJSON(raw) != nil {
		return nil
	}
	return &b
}

// Kinds of bundle content, decided without verifying anything: only to
// pick which bundles a check looks at.
const (
	bundleSignature   = 1 << iota // a message signature or a `cosign sign` statement
	bundleAttestation             // a statement of another predicate type
)

// kind says what b claims to hold. A bundle that cannot be read claims
// both, so that it counts (as unverifiable) wherever it is looked at.
func (b sigBundle) kind() int {
	if b.parsed == nil {
		return bundleSignature | bundleAttestation
	}
	if b.parsed.GetMessageSignature() != nil {
		return bundleSignature
	}
	env := b.envelope()
	if env == nil {
		return bundleSignature | bundleAttestation
	}
	st, err := unverifiedStatement(env)
	switch {
	case err != nil:
		return bundleSignature | bundleAttestation
	case st.PredicateType == CosignSignPredicateType:
		return bundleSignature
	}
	return bundleAttestation
}

// envelope renders the bundle's DSSE envelope as DSSE's JSON (what a
// legacy `.att` layer holds), or nil when it has none.
func (b sigBundle) envelope() []byte {
	if b.parsed == nil {
		return nil
	}
	sc, err := b.parsed.SignatureContent()
	if err != nil {
		return nil
	}
	env, ok := sc.(*bundle.Envelope)
	if !ok {
		return nil
	}
	raw, err := json.Marshal(env.RawEnvelope())
	if err != nil {
		return nil
	}
	return raw
}

// checkBundleSignature verifies a signature bundle with v and checks that
// it binds want: a message signature over a message whose sha256 is want,
// or a DSSE `cosign sign` statement whose subject has want's sha256.
func checkBundleSignature(b sigBundle, want digest.Digest, v *Verifier) verdict {
	if b.parsed == nil {
		return verdictUntrusted
	}
	if ms := b.parsed.GetMessageSignature(); ms != nil {
		return checkMessageSignature(ms.GetMessageDigest(), ms.GetSignature(), want, v)
	}
	env := b.envelope()
	if env == nil {
		return verdictUntrusted
	}
	decoded, ok := openEnvelope(env, v)
	if !ok {
		return verdictUntrusted
	}
	st, err := parseStatement(decoded)
	if err != nil || st.PredicateType != CosignSignPredicateType || !namesDigest(st.Subject, want) {
		return verdictWrongSubject
	}
	return verdictOK
}

// checkMessageSignature verifies sig over the message digest md with v, and
// that md is want.
func checkMessageSignature(md *protocommon.HashOutput, sig []byte, want digest.Digest, v *Verifier) verdict {
	if md == nil || md.GetAlgorithm() != protocommon.HashAlgorithm_SHA2_256 || len(sig) == 0 {
		return verdictUntrusted
	}
	if v.v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(nil), options.WithDigest(md.GetDigest())) != nil {
		return verdictUntrusted
	}
	if want.Algorithm() != digest.SHA256 || hex.EncodeToString(md.GetDigest()) != want.Encoded() {
		return verdictWrongSubject
	}
	return verdictOK
}
