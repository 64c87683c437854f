package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// SignatureResult says which publisher signature verified.
type SignatureResult struct {
	// KeyID is the id of the key the signature verified with.
	KeyID string
	// Form is the form of the signature that verified (the last one, when
	// several did; bundles are looked at after the legacy tag): FormLegacy
	// or FormBundle.
	Form string
	// PayloadDigest is the digest of what verified: the simple-signing
	// payload of a legacy signature, the bundle layer of a bundle.
	PayloadDigest digest.Digest
	// DockerReference is the image name a legacy payload claims. cosign
	// does not check it and neither does oa; it is informational.
	DockerReference string
	// Manifest is the manifest read: the `sha256-<hex>.sig` manifest, or
	// the bundle manifest.
	Manifest ocispec.Descriptor
	// Verified counts the signatures that verified for the subject, in
	// every form.
	Verified int
	// Signer is the identity the certificate of the signature that
	// verified names; nil when the verifier is a key.
	Signer *CertIdentity
}

// VerifySignature checks the publisher signature of manifest subject in
// target, as `cosign verify --key` does, offline (no transparency log, no
// certificate): at least one signature must verify with v and bind
// subject.Digest, in either form cosign writes — a simple-signing layer of
// the `sha256-<hex>.sig` manifest naming the digest, or a sigstore bundle
// referrer holding a message signature over the manifest or a DSSE
// `cosign sign` statement whose subject is the digest. Every byte read is
// checked against its digest.
//
// Refusals: signature_missing (no signature in either form),
// signature_wrong_subject (one verifies with v but names another digest),
// signature_untrusted (none verifies with v), layer_digest_mismatch
// (stored content does not match its digest).
func VerifySignature(ctx context.Context, target oras.ReadOnlyTarget, subject ocispec.Descriptor, v *Verifier) (*SignatureResult, error) {
	if v == nil {
		return nil, errors.New("signing: VerifySignature needs a verifier")
	}
	if err := oci.CheckSubject(subject); err != nil {
		return nil, err
	}
	img, err := readCosignImage(ctx, target, oci.SignatureTag(subject.Digest))
	if err != nil {
		return nil, err
	}
	bundles, err := readBundles(ctx, target, subject)
	if err != nil {
		return nil, err
	}
	res := &SignatureResult{KeyID: v.keyID}
	best, candidates := verdictUntrusted, 0
	for i, l := range img.layers {
		if l.MediaType != oci.SimpleSigningMediaType {
			continue
		}
		candidates++
		got, ref, signer := checkSignatureLayer(l, img.blobs[i], subject.Digest, v)
		best = max(best, got)
		if got == verdictOK {
			res.Verified++
			res.Form, res.Manifest, res.PayloadDigest, res.DockerReference, res.Signer = FormLegacy, img.desc, l.Digest, ref, signer
		}
	}
	for _, b := range bundles {
		if b.kind()&bundleSignature == 0 {
			continue
		}
		candidates++
		got, signer := checkBundleSignature(b, subject.Digest, v)
		best = max(best, got)
		if got == verdictOK {
			res.Verified++
			res.Form, res.Manifest, res.PayloadDigest, res.DockerReference, res.Signer = FormBundle, b.manifest, b.layer.Digest, "", signer
		}
	}
	if candidates == 0 {
		return nil, missingSignature(img)
	}
	if err := signatureRefusal(best); err != nil {
		return nil, oversized(img, bundles, err)
	}
	return res, nil
}

// missingSignature says why no signature was found.
func missingSignature(img cosignImage) error {
	if img.found {
		return blocking.New(blocking.SignatureMissing, "the signature manifest has no simple-signing layer and no signature bundle refers to the digest")
	}
	return blocking.New(blocking.SignatureMissing, "no signature tag and no signature bundle for the digest")
}

// verdict ranks how far a layer got through verification.
type verdict int

// Verdicts, worst first. The certificate verdicts come from identity
// verifiers only: the signature verifies with its certificate's key, but
// the certificate is not trusted (a CA outside the trusted root, another
// identity, no proven time inside its window).
const (
	verdictUntrusted verdict = iota
	verdictCertUntrusted
	verdictIdentityMismatch
	verdictTimeUnproven
	verdictWrongSubject
	verdictPredicateInvalid
	verdictOK
)

// signatureRefusal is the refusal for the best verdict among signature
// layers, or nil when one verified.
func signatureRefusal(best verdict) error {
	switch best {
	case verdictOK:
		return nil
	case verdictWrongSubject:
		return blocking.New(blocking.SignatureWrongSubject, "a signature by the trusted key names another manifest digest")
	case verdictCertUntrusted, verdictIdentityMismatch, verdictTimeUnproven:
		return identityRefusal(best, "signature")
	default:
		return blocking.New(blocking.SignatureUntrusted, "no signature layer verifies with the trusted key")
	}
}

// checkSignatureLayer verifies one simple-signing layer with v and checks
// that its payload names want. It returns the docker-reference on success,
// and for an identity verifier the identity that signed.
func checkSignatureLayer(l ocispec.Descriptor, blob []byte, want digest.Digest, v *Verifier) (verdict, string, *CertIdentity) {
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return verdictUntrusted, "", nil
	}
	if v.ident != nil {
		return checkCertSignatureLayer(l, blob, sig, want, v)
	}
	got, ref := checkKeySignatureLayer(blob, sig, want, v)
	return got, ref, nil
}

// checkCertSignatureLayer checks a legacy layer signed with a certificate
// against an identity: first the signature and subject with the
// certificate's key, then the certificate with sigstore-go.
func checkCertSignatureLayer(l ocispec.Descriptor, blob, sig []byte, want digest.Digest, v *Verifier) (verdict, string, *CertIdentity) {
	sum := sha256.Sum256(blob)
	ent := newLegacyEntity(l.Annotations, bundle.NewMessageSignature(sum[:], "SHA2_256", sig))
	if ent == nil {
		return verdictUntrusted, "", nil
	}
	kv, err := newVerifier(ent.cert.PublicKey)
	if err != nil {
		return verdictUntrusted, "", nil
	}
	got, ref := checkKeySignatureLayer(blob, sig, want, kv)
	if got == verdictUntrusted {
		return got, "", nil
	}
	idv, signer := v.ident.check(ent, ent.cert, verify.WithArtifact(bytes.NewReader(blob)))
	if idv != verdictOK {
		return idv, "", nil
	}
	return got, ref, signer
}

// checkKeySignatureLayer verifies sig over a simple-signing blob with key
// verifier v and checks the payload names want.
func checkKeySignatureLayer(blob, sig []byte, want digest.Digest, v *Verifier) (verdict, string) {
	if v.v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(blob)) != nil {
		return verdictUntrusted, ""
	}
	var sci payload.SimpleContainerImage
	if json.Unmarshal(blob, &sci) != nil || sci.Critical.Type != payload.CosignSignatureType {
		return verdictWrongSubject, ""
	}
	if sci.Critical.Image.DockerManifestDigest != want.String() {
		return verdictWrongSubject, ""
	}
	return verdictOK, sci.Critical.Identity.DockerReference
}

// VerifyIndependent refuses attestation_by_publisher when the conformance
// authority's key is the publisher's own key (the same KeyID).
func VerifyIndependent(publisher, authority *Verifier) error {
	if publisher == nil || authority == nil {
		return errors.New("signing: VerifyIndependent needs both keys")
	}
	if publisher.keyID == authority.keyID {
		return blocking.New(blocking.AttestationByPublisher, "the authority is trusted as the publisher is (%s)", authority.describe())
	}
	return nil
}

// cosignImage is a `.sig` or `.att` manifest with its layers' verified
// bytes. found is false (and the rest empty) when the tag does not exist.
type cosignImage struct {
	found bool
	// parsed is true when desc is an image manifest that decoded.
	parsed bool
	desc   ocispec.Descriptor
	layers []ocispec.Descriptor
	blobs  [][]byte
	// tooLarge is the refusal for the first layer of a type oa reads that
	// was over the size limit and so not read; nil when there was none.
	tooLarge error
}

// oversized returns the refusal for content skipped as too large when
// nothing verified (it may have been what would have), else err.
func oversized(img cosignImage, bundles []sigBundle, err error) error {
	if img.tooLarge != nil {
		return img.tooLarge
	}
	for _, b := range bundles {
		if b.tooLarge != nil {
			return b.tooLarge
		}
	}
	return err
}

// readCosignImage reads the manifest tag names (one request, digest
// checked) and the layers oa understands, checking every digest. A missing
// tag is not an error.
func readCosignImage(ctx context.Context, target oras.ReadOnlyTarget, tag string) (cosignImage, error) {
	m, err := oci.ReadCosignManifest(ctx, target, tag)
	switch {
	case oci.Tampered(err):
		return cosignImage{}, blocking.New(blocking.LayerDigestMismatch, "the cosign manifest does not match its digest")
	case err != nil:
		return cosignImage{}, fmt.Errorf("reading cosign tag: %w", err)
	case !m.Found:
		return cosignImage{}, nil
	case m.TooLarge:
		return cosignImage{found: true, desc: m.Descriptor}, nil // not one of ours: no usable layers
	}
	img := cosignImage{found: true, parsed: m.Parsed, desc: m.Descriptor, layers: m.Layers, blobs: make([][]byte, len(m.Layers))}
	lim := oci.LimitsOf(target)
	for i, l := range m.Layers {
		if !knownCosignLayer(l) {
			continue
		}
		if err := lim.Check(l); err != nil {
			// Not read; it counts as unverifiable, so that junk pushed
			// beside a good signature cannot block it.
			if img.tooLarge == nil {
				img.tooLarge = err
			}
			continue
		}
		if img.blobs[i], err = oci.FetchReferenced(ctx, target, l); err != nil {
			return cosignImage{}, err
		}
	}
	return img, nil
}

// knownCosignLayer reports whether l is a layer type oa reads.
func knownCosignLayer(l ocispec.Descriptor) bool {
	return l.MediaType == oci.SimpleSigningMediaType || l.MediaType == oci.DSSEMediaType
}

// onlyFor reports whether every layer of the image claims subject (without
// verifying signatures), so that deleting it cannot remove another
// manifest's signatures that happen to share these bytes.
func (img cosignImage) onlyFor(subject digest.Digest) bool {
	if !img.parsed {
		return false
	}
	for i, l := range img.layers {
		if img.blobs[i] == nil || claimedSubject(l.MediaType, img.blobs[i]) != subject {
			return false
		}
	}
	return true
}

// claimedSubject is the manifest digest a signature or attestation layer
// claims, unverified; empty when it claims none or several.
func claimedSubject(mediaType string, blob []byte) digest.Digest {
	switch mediaType {
	case oci.SimpleSigningMediaType:
		var sci payload.SimpleContainerImage
		if json.Unmarshal(blob, &sci) != nil {
			return ""
		}
		return digest.Digest(sci.Critical.Image.DockerManifestDigest)
	case oci.DSSEMediaType:
		st, err := unverifiedStatement(blob)
		if err != nil || len(st.Subject) != 1 {
			return ""
		}
		return digest.NewDigestFromEncoded(digest.SHA256, st.Subject[0].Digest["sha256"])
	}
	return ""
}
