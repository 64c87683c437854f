package signing

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// AttestationResult is the verified attestation.
type AttestationResult struct {
	// KeyID is the id of the key the envelope verified with.
	KeyID string
	// Form is the form of the envelope the predicate came from: FormLegacy
	// or FormBundle.
	Form string
	// PredicateType is the statement's predicate type.
	PredicateType string
	// Predicate is the verified statement's predicate, a JSON object (the
	// last one, when several verified: legacy layers in order, then
	// bundles).
	Predicate []byte
	// EnvelopeDigest is the digest of the layer the envelope came from: the
	// DSSE layer, or the bundle layer.
	EnvelopeDigest digest.Digest
	// Manifest is the manifest read: the `sha256-<hex>.att` manifest, or the
	// bundle manifest.
	Manifest ocispec.Descriptor
	// Verified counts the envelopes that verified for subject and type.
	Verified int
	// Signer is the identity the certificate of the envelope that verified
	// names; nil when the verifier is a key.
	Signer *CertIdentity
}

// AttestationOption adjusts VerifyAttestation.
type AttestationOption func(*attestationConfig)

// attestationConfig holds the options of VerifyAttestation.
type attestationConfig struct {
	publishers []*Verifier
}

// WithPublisher names a publisher's key, which must not vouch for its
// own conformance: VerifyAttestation then refuses attestation_by_publisher
// when the authority key is the publisher's, or when any envelope of the
// requested predicate type verifies with the publisher's key. It may be
// given once per trusted publisher.
func WithPublisher(publisher *Verifier) AttestationOption {
	return func(c *attestationConfig) { c.publishers = append(c.publishers, publisher) }
}

// VerifyAttestation checks the attestation of manifest subject in target,
// as `cosign verify-attestation --key --type predicateType` does, offline:
// a DSSE envelope must verify with v and hold an in-toto statement whose
// subject has subject's sha256 and whose predicate type is predicateType,
// with a JSON object predicate. Envelopes are read in both forms cosign
// writes: layers of the `sha256-<hex>.att` manifest, and sigstore bundle
// referrers. Every byte read is checked against its digest.
//
// Refusals: attestation_missing, attestation_untrusted (no envelope
// verifies with v), attestation_wrong_subject (one verifies but names
// another digest), attestation_predicate_invalid (one verifies for the
// subject but with another type or a predicate that is not an object),
// attestation_by_publisher (see WithPublisher), layer_digest_mismatch.
func VerifyAttestation(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor, v *Verifier, predicateType string, opts ...AttestationOption) (*AttestationResult, error) {
	var cfg attestationConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkAttestationInputs(subject, v, cfg); err != nil {
		return nil, err
	}
	img, err := readCosignImage(ctx, target, oci.AttestationTag(subject.Digest))
	if err != nil {
		return nil, err
	}
	bundles, err := readBundles(ctx, target, subject)
	if err != nil {
		return nil, err
	}
	envs := append(legacyEnvelopes(img), bundleEnvelopes(bundles)...)
	switch {
	case len(envs) > 0:
		res, err := verifyEnvelopes(envs, subject.Digest, v, predicateType, cfg)
		if r := blocking.Refusals(err); r != nil && r[0].Code != blocking.AttestationByPublisher {
			return nil, oversized(img, bundles, err)
		}
		return res, err
	case img.found:
		return nil, blocking.New(blocking.AttestationMissing, "the attestation manifest has no DSSE layer and no attestation bundle refers to the digest")
	}
	return nil, blocking.New(blocking.AttestationMissing, "no attestation tag and no attestation bundle for the digest")
}

// envelope is one DSSE envelope to check, with where it came from. blob
// is nil when it could not be read (it then verifies with no key).
type envelope struct {
	form     string
	manifest ocispec.Descriptor
	layer    digest.Digest
	blob     []byte
	// annotations are a legacy layer's (its certificate, timestamp and log
	// entry); signed is the bundle an envelope came from. Identity
	// verifiers read the certificate material from them.
	annotations map[string]string
	signed      *bundle.Bundle
}

// legacyEnvelopes are the DSSE layers of a `.att` manifest.
func legacyEnvelopes(img cosignImage) []envelope {
	var out []envelope
	for i, l := range img.layers {
		if l.MediaType == oci.DSSEMediaType {
			out = append(out, envelope{form: FormLegacy, manifest: img.desc, layer: l.Digest, blob: img.blobs[i], annotations: l.Annotations})
		}
	}
	return out
}

// bundleEnvelopes are the envelopes of the bundles that claim to be
// attestations.
func bundleEnvelopes(bundles []sigBundle) []envelope {
	var out []envelope
	for _, b := range bundles {
		if b.kind()&bundleAttestation != 0 {
			out = append(out, envelope{form: FormBundle, manifest: b.manifest, layer: b.layer.Digest, blob: b.envelope(), signed: b.parsed})
		}
	}
	return out
}

// open verifies e's signature with v and returns the decoded payload. For
// an identity verifier the envelope's certificate must verify under the
// identity with sigstore-go (chain, time, identity), and the identity that
// signed is returned.
func (e envelope) open(v *Verifier) ([]byte, verdict, *CertIdentity) {
	if e.blob == nil {
		return nil, verdictUntrusted, nil
	}
	if v.ident == nil {
		decoded, ok := openEnvelope(e.blob, v)
		if !ok {
			return nil, verdictUntrusted, nil
		}
		return decoded, verdictOK, nil
	}
	entity, cert := e.certified()
	if cert == nil {
		return nil, verdictUntrusted, nil
	}
	kv, err := newVerifier(cert.PublicKey)
	if err != nil {
		return nil, verdictUntrusted, nil
	}
	decoded, ok := openEnvelope(e.blob, kv)
	if !ok {
		return nil, verdictUntrusted, nil
	}
	got, signer := v.ident.check(entity, cert, verify.WithoutArtifactUnsafe())
	if got != verdictOK {
		return nil, got, nil
	}
	return decoded, verdictOK, signer
}

// certified is the signed entity and certificate of the envelope, or a
// nil certificate when it was signed with a key.
func (e envelope) certified() (verify.SignedEntity, *x509.Certificate) {
	if e.signed != nil {
		b := sigBundle{parsed: e.signed}
		return e.signed, b.certificate()
	}
	var env dsse.Envelope
	if json.Unmarshal(e.blob, &env) != nil {
		return nil, nil
	}
	ent := newLegacyEntity(e.annotations, legacyEnvelopeContent{Envelope: &bundle.Envelope{Envelope: &env}, raw: e.blob})
	if ent == nil {
		return nil, nil
	}
	return ent, ent.cert
}

// checkAttestationInputs checks the subject and the keys' independence.
func checkAttestationInputs(subject ocispec.Descriptor, v *Verifier, cfg attestationConfig) error {
	if v == nil {
		return errors.New("signing: VerifyAttestation needs a verifier")
	}
	if err := oci.CheckSubject(subject); err != nil {
		return err
	}
	for _, p := range cfg.publishers {
		if err := VerifyIndependent(p, v); err != nil {
			return err
		}
	}
	return nil
}

// verifyEnvelopes checks every envelope and keeps the best result.
func verifyEnvelopes(envs []envelope, want digest.Digest, v *Verifier, predicateType string, cfg attestationConfig) (*AttestationResult, error) {
	res := &AttestationResult{KeyID: v.keyID, PredicateType: predicateType}
	best := verdictUntrusted
	for _, e := range envs {
		for _, p := range cfg.publishers {
			if publisherAttested(e, p, predicateType) {
				return nil, blocking.New(blocking.AttestationByPublisher, "an attestation of the predicate type verifies as the publisher's (%s)", p.describe())
			}
		}
		got, predicate, signer := checkEnvelope(e, want, v, predicateType)
		best = max(best, got)
		if got == verdictOK {
			res.Verified++
			res.Form, res.Manifest, res.Predicate, res.EnvelopeDigest, res.Signer = e.form, e.manifest, predicate, e.layer, signer
		}
	}
	if err := attestationRefusal(best); err != nil {
		return nil, err
	}
	return res, nil
}

// publisherAttested reports whether env verifies with the publisher's key
// and carries predicateType. Other predicate types (the publisher's own
// provenance, say) are the publisher's to sign.
func publisherAttested(e envelope, publisher *Verifier, predicateType string) bool {
	decoded, got, _ := e.open(publisher)
	if got != verdictOK {
		return false
	}
	st, err := parseStatement(decoded)
	return err == nil && st.PredicateType == predicateType
}

// checkEnvelope verifies one envelope with v and checks its statement in
// the order cosign does: signature, subject digest, predicate type.
func checkEnvelope(e envelope, want digest.Digest, v *Verifier, predicateType string) (verdict, []byte, *CertIdentity) {
	decoded, got, signer := e.open(v)
	if got != verdictOK {
		return got, nil, nil
	}
	st, err := parseStatement(decoded)
	if err != nil {
		return verdictPredicateInvalid, nil, nil
	}
	if !namesDigest(st.Subject, want) {
		return verdictWrongSubject, nil, nil
	}
	if st.PredicateType != predicateType || !isJSONObject(st.Predicate) {
		return verdictPredicateInvalid, nil, nil
	}
	return verdictOK, append([]byte(nil), st.Predicate...), signer
}

// namesDigest reports whether a subject has want's sha256 (names are not
// checked, as cosign does not check them).
func namesDigest(subjects []inTotoSubject, want digest.Digest) bool {
	for _, s := range subjects {
		if s.Digest[string(digest.SHA256)] == want.Encoded() {
			return true
		}
	}
	return false
}

// attestationRefusal is the refusal for the best verdict among envelopes,
// or nil when one verified.
func attestationRefusal(best verdict) error {
	switch best {
	case verdictOK:
		return nil
	case verdictPredicateInvalid:
		return blocking.New(blocking.AttestationPredicateBad, "the trusted attestation for the digest has another predicate type or a predicate that is not a JSON object")
	case verdictWrongSubject:
		return blocking.New(blocking.AttestationWrongSubject, "an attestation by the trusted key names another manifest digest")
	case verdictCertUntrusted, verdictIdentityMismatch, verdictTimeUnproven:
		return identityRefusal(best, "attestation")
	default:
		return blocking.New(blocking.AttestationUntrusted, "no attestation envelope verifies with the trusted key")
	}
}
