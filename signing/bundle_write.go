package signing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// Annotations cosign puts on a bundle manifest, so that a referrers list
// says what each bundle holds (informational: verification reads the
// bundle).
const (
	bundleContentAnnotation       = "dev.sigstore.bundle.content"
	bundlePredicateTypeAnnotation = "dev.sigstore.bundle.predicateType"
	bundleContentDSSE             = "dsse-envelope"
)

// signBundle writes a publisher signature over the manifest subject into
// target in the sigstore bundle format, as `cosign sign --key` v3 does by
// default: an in-toto v1 statement of predicate type
// CosignSignPredicateType naming subject's digest, in a DSSE envelope
// signed by s, in a bundle (public-key verification material, no
// transparency log entry) that is the one layer of a referrer manifest of
// subject. subject must be the whole descriptor (media type, digest,
// size); repository names the subject in the statement, as in signTag.
//
// A signature by the same key over the same statement is not added twice.
// It returns the descriptor of the bundle manifest.
func signBundle(ctx context.Context, target oras.Target, repository string, subject ocispec.Descriptor, s *Signer) (ocispec.Descriptor, error) {
	stmt, err := bundleStatement(repository, subject, CosignSignPredicateType, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return writeBundle(ctx, target, subject, CosignSignPredicateType, stmt, s)
}

// attestBundle writes an attestation over the manifest subject into target
// in the sigstore bundle format, as `cosign attest --key --type
// predicateType` v3 does by default: an in-toto v1 statement (subject's
// digest, predicateType, predicate) in a DSSE envelope signed by s, in a
// bundle referrer manifest of subject. predicate must be a JSON object and
// predicateType a URI (attestation_predicate_invalid otherwise).
func attestBundle(ctx context.Context, target oras.Target, repository string, subject ocispec.Descriptor, predicateType string, predicate []byte, s *Signer) (ocispec.Descriptor, error) {
	if err := checkPredicate(predicateType, predicate); err != nil {
		return ocispec.Descriptor{}, err
	}
	stmt, err := bundleStatement(repository, subject, predicateType, predicate)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return writeBundle(ctx, target, subject, predicateType, stmt, s)
}

// bundleStatement is the in-toto v1 statement of a bundle.
func bundleStatement(repository string, subject ocispec.Descriptor, predicateType string, predicate []byte) ([]byte, error) {
	ref, err := subjectName(repository, subject)
	if err != nil {
		return nil, err
	}
	if subject.MediaType == "" || subject.Size <= 0 {
		return nil, blocking.New(blocking.ReferenceInvalid, "a bundle's subject needs the artifact's media type and size")
	}
	b, err := json.Marshal(inTotoStatement{
		Type:          inTotoStatementV1,
		PredicateType: predicateType,
		Subject:       []inTotoSubject{{Name: ref.Repository.Name(), Digest: map[string]string{"sha256": subject.Digest.Encoded()}}},
		Predicate:     json.RawMessage(predicate),
	})
	if err != nil {
		return nil, fmt.Errorf("encoding statement: %w", err)
	}
	return b, nil
}

// writeBundle signs stmt into a bundle and pushes it as a referrer of
// subject, unless a bundle by the same key over the same statement is
// there already.
func writeBundle(ctx context.Context, target oras.Target, subject ocispec.Descriptor, predicateType string, stmt []byte, s *Signer) (ocispec.Descriptor, error) {
	existing, err := readBundles(ctx, target, subject)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	for _, b := range existing {
		if decoded, ok := openEnvelope(b.envelope(), s.verifier); ok && bytes.Equal(decoded, stmt) {
			return b.manifest, nil
		}
	}
	raw, err := newDSSEBundle(stmt, s)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return pushBundle(ctx, target, subject, raw, map[string]string{
		bundleContentAnnotation:       bundleContentDSSE,
		bundlePredicateTypeAnnotation: predicateType,
	})
}

// newDSSEBundle signs stmt in a DSSE envelope with s and wraps it in a
// bundle whose verification material is s's public key (by hint: the key
// id), with no transparency log entry.
func newDSSEBundle(stmt []byte, s *Signer) ([]byte, error) {
	envJSON, err := sigdsse.WrapSigner(s.sv, InTotoPayloadType).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		return nil, fmt.Errorf("signing statement: %w", err)
	}
	var env struct {
		Signatures []struct {
			Sig string `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(envJSON, &env); err != nil || len(env.Signatures) != 1 {
		return nil, fmt.Errorf("reading the signed envelope: %v", err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		return nil, fmt.Errorf("reading the envelope signature: %w", err)
	}
	pb := &protobundle.Bundle{
		MediaType: oci.BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: s.KeyID()}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload:     stmt,
			PayloadType: InTotoPayloadType,
			Signatures:  []*protodsse.Signature{{Sig: sig}},
		}},
	}
	raw, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("encoding bundle: %w", err)
	}
	return raw, nil
}

// pushBundle pushes raw as the one layer of a bundle manifest of subject
// (image-spec 1.1, empty config). A registry without the referrers API
// gets the `sha256-<hex>` referrers tag updated by oras-go.
func pushBundle(ctx context.Context, target oras.Target, subject ocispec.Descriptor, raw []byte, annotations map[string]string) (ocispec.Descriptor, error) {
	layer := content.NewDescriptorFromBytes(oci.BundleMediaType, raw)
	if _, err := oci.PushIfMissing(ctx, target, layer, raw); err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, oci.BundleMediaType, oras.PackManifestOptions{
		Subject:             &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: annotations,
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing bundle manifest: %w", err)
	}
	return desc, nil
}
