package signing

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/oci"
)

// The sigstore bundle format, cosign v3's default: each signature or
// attestation is a protobuf-JSON bundle, the one layer of an image-spec 1.1
// manifest whose artifactType is the bundle media type
// (oci.BundleMediaType) and whose subject is the signed manifest. A
// registry lists it through the referrers API, or under the `sha256-<hex>`
// referrers tag where it has none; a layout through the subject links of
// its manifests.
const (
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
// its subject (oci.Referrers: bounded, every digest checked) and decodes
// each.
func readBundles(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor) ([]sigBundle, error) {
	referrers, err := oci.Referrers(ctx, target, subject, oci.BundleMediaType)
	if err != nil {
		return nil, err
	}
	out := make([]sigBundle, len(referrers))
	for i, r := range referrers {
		out[i] = bundleOf(r)
	}
	return out, nil
}

// bundleOf decodes the bundle r holds.
func bundleOf(r oci.Referrer) sigBundle {
	return sigBundle{manifest: r.Manifest, layer: r.Layer, parsed: parseBundle(r.Data), tooLarge: r.TooLarge}
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
// or a DSSE `cosign sign` statement whose subject has want's sha256. For
// an identity verifier it returns the identity that signed.
func checkBundleSignature(b sigBundle, want digest.Digest, v *Verifier) (verdict, *CertIdentity) {
	if b.parsed == nil {
		return verdictUntrusted, nil
	}
	if v.ident == nil {
		return checkKeyBundleSignature(b, want, v), nil
	}
	cert := b.certificate()
	if cert == nil {
		return verdictUntrusted, nil
	}
	kv, err := newVerifier(cert.PublicKey)
	if err != nil {
		return verdictUntrusted, nil
	}
	got := checkKeyBundleSignature(b, want, kv)
	if got == verdictUntrusted {
		return got, nil
	}
	artifact := verify.WithoutArtifactUnsafe()
	if ms := b.parsed.GetMessageSignature(); ms != nil {
		artifact = verify.WithArtifactDigest("sha256", ms.GetMessageDigest().GetDigest())
	}
	idv, signer := v.ident.check(b.parsed, cert, artifact)
	if idv != verdictOK {
		return idv, nil
	}
	return got, signer
}

// certificate is the bundle's signing certificate, or nil when it is
// signed with a key.
func (b sigBundle) certificate() *x509.Certificate {
	if b.parsed == nil {
		return nil
	}
	vc, err := b.parsed.VerificationContent()
	if err != nil {
		return nil
	}
	return vc.Certificate()
}

// checkKeyBundleSignature is checkBundleSignature with a key verifier.
func checkKeyBundleSignature(b sigBundle, want digest.Digest, v *Verifier) verdict {
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
