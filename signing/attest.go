package signing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// ConformancePredicateType is the in-toto predicate type of an oa
// conformance report.
const ConformancePredicateType = "https://oa.dev/attestations/conformance/v1"

// Cosign's attestation format.
const (
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// PredicateTypeAnnotation names the predicate type on an attestation
	// layer (cosign writes it; verification reads the statement instead).
	PredicateTypeAnnotation = "predicateType"
)

// In-toto statement types: cosign attest writes v0.1; v1 is accepted.
const (
	inTotoStatementV01 = "https://in-toto.io/Statement/v0.1"
	inTotoStatementV1  = "https://in-toto.io/Statement/v1"
)

// inTotoStatement is an in-toto statement with cosign's field order.
type inTotoStatement struct {
	Type          string          `json:"_type"`
	PredicateType string          `json:"predicateType"`
	Subject       []inTotoSubject `json:"subject"`
	Predicate     json.RawMessage `json:"predicate"`
}

// inTotoSubject names one artifact by digest.
type inTotoSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// attestTag writes an attestation over the manifest subject into target in
// cosign's format: an in-toto v0.1 statement (subject repository with
// subject's sha256, predicateType, predicate) in a DSSE envelope signed by
// s, as a layer of the `sha256-<hex>.att` manifest, like
// `cosign attest --type URI --predicate FILE`. predicate must be a JSON
// object and predicateType a URI (attestation_predicate_invalid otherwise).
//
// attestTag appends like signTag: the same statement signed by the same key is
// not added twice, and the superseded manifest is deleted when target can
// delete. It returns the descriptor of the attestation manifest now tagged.
func attestTag(ctx context.Context, target oras.Target, repository string, subject ocispec.Descriptor, predicateType string, predicate []byte, s *Signer) (ocispec.Descriptor, error) {
	stmt, err := newStatement(repository, subject, predicateType, predicate)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	env, err := sigdsse.WrapSigner(s.sv, InTotoPayloadType).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("signing statement: %w", err)
	}
	ann := map[string]string{SignatureAnnotation: "", PredicateTypeAnnotation: predicateType}
	layer := newCosignLayer(oci.DSSEMediaType, env, ann)
	dup := func(l ocispec.Descriptor, blob []byte) bool {
		return sameAttestation(l, blob, stmt, predicateType, s.verifier)
	}
	return appendCosignLayer(ctx, target, oci.AttestationTag(subject.Digest), subject.Digest, layer, dup)
}

// newStatement builds the statement bytes cosign attest would sign.
func newStatement(repository string, subject ocispec.Descriptor, predicateType string, predicate []byte) ([]byte, error) {
	ref, err := subjectName(repository, subject)
	if err != nil {
		return nil, err
	}
	if err := checkPredicate(predicateType, predicate); err != nil {
		return nil, err
	}
	st := inTotoStatement{
		Type:          inTotoStatementV01,
		PredicateType: predicateType,
		Subject:       []inTotoSubject{{Name: ref.Repository.Name(), Digest: map[string]string{"sha256": subject.Digest.Encoded()}}},
		Predicate:     json.RawMessage(predicate),
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding statement: %w", err)
	}
	return b, nil
}

// checkPredicate refuses a predicate type that is not a URI (as cosign
// does) and a predicate that is not a JSON object.
func checkPredicate(predicateType string, predicate []byte) error {
	if _, err := url.ParseRequestURI(predicateType); err != nil {
		return blocking.New(blocking.AttestationPredicateBad, "the predicate type is not a URI")
	}
	if !isJSONObject(predicate) {
		return blocking.New(blocking.AttestationPredicateBad, "the predicate is not a JSON object")
	}
	return nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// sameAttestation reports whether existing layer l is an envelope by v
// around exactly stmt with the same predicate type annotation.
func sameAttestation(l ocispec.Descriptor, blob, stmt []byte, predicateType string, v *Verifier) bool {
	if l.MediaType != oci.DSSEMediaType || blob == nil || l.Annotations[PredicateTypeAnnotation] != predicateType {
		return false
	}
	decoded, ok := openEnvelope(blob, v)
	return ok && bytes.Equal(decoded, stmt)
}

// openEnvelope verifies a DSSE envelope of an in-toto statement with v and
// returns the statement bytes.
func openEnvelope(env []byte, v *Verifier) ([]byte, bool) {
	var decoded []byte
	dv := sigdsse.WrapVerifier(v.v, sigdsse.WithExpectedPayloadType(InTotoPayloadType), sigdsse.WithDecodedPayload(&decoded))
	if err := dv.VerifySignature(bytes.NewReader(env), nil); err != nil {
		return nil, false
	}
	return decoded, true
}

// dsseEnvelope is the part of a DSSE envelope read without verifying it.
type dsseEnvelope struct {
	PayloadType string `json:"payloadType"`
	Payload     string `json:"payload"`
}

// unverifiedStatement decodes the statement inside env without checking
// any signature; only for housekeeping decisions, never for trust.
func unverifiedStatement(env []byte) (inTotoStatement, error) {
	var e dsseEnvelope
	if err := json.Unmarshal(env, &e); err != nil {
		return inTotoStatement{}, err
	}
	if e.PayloadType != InTotoPayloadType {
		return inTotoStatement{}, errors.New("not an in-toto envelope")
	}
	b, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return inTotoStatement{}, err
	}
	return parseStatement(b)
}

// parseStatement decodes an in-toto statement of a known type.
func parseStatement(b []byte) (inTotoStatement, error) {
	var st inTotoStatement
	if err := json.Unmarshal(b, &st); err != nil {
		return inTotoStatement{}, err
	}
	if st.Type != inTotoStatementV01 && st.Type != inTotoStatementV1 {
		return inTotoStatement{}, errors.New("unknown in-toto statement type")
	}
	return st, nil
}
