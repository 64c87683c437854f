package signing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

const csPredicate = `{"authority":"oa-test-authority","checks":[{"name":"schema","passed":true}],"workerIrDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}`

// TestAttestVerify attests an artifact in each kind of target and verifies
// the predicate comes back, with cosign's layer shape.
func TestAttestVerify(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		pub, auth := csKey(t, 0), csKey(t, 1)
		subject := csPushWorker(t, st.target, "a")
		attDesc, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		res, err := VerifyAttestation(ctx, st.target, subject, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Predicate) != csPredicate || res.KeyID != auth.verifier.KeyID() || res.Manifest.Digest != attDesc.Digest || res.Verified != 1 {
			t.Fatalf("result %+v", res)
		}
		csCheckAttShape(t, st, subject)
	})
}

// csCheckAttShape checks the .att layer is cosign's: a DSSE envelope with
// an empty signature annotation and a predicateType annotation, holding an
// in-toto v0.1 statement about the subject.
func csCheckAttShape(t *testing.T, st csStore, subject ocispec.Descriptor) {
	t.Helper()
	_, m := csManifest(t, st.target, oci.AttestationTag(subject.Digest))
	if len(m.Layers) != 1 || m.Config.MediaType != cosignConfigMediaType || m.Subject != nil {
		t.Fatalf("manifest %+v", m)
	}
	l := m.Layers[0]
	sig, hasSig := l.Annotations[SignatureAnnotation]
	if l.MediaType != oci.DSSEMediaType || !hasSig || sig != "" || l.Annotations[PredicateTypeAnnotation] != ConformancePredicateType {
		t.Fatalf("layer %+v", l)
	}
	st0, err := unverifiedStatement(csBlob(t, st.target, l))
	if err != nil || st0.Type != inTotoStatementV01 || len(st0.Subject) != 1 || st0.Subject[0].Digest["sha256"] != subject.Digest.Encoded() || st0.Subject[0].Name != st.repo {
		t.Fatalf("statement %+v, %v", st0, err)
	}
}

// TestAttestIdempotent: the same statement by the same key is stored once;
// a new report appends and is the one returned.
func TestAttestIdempotent(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		auth := csKey(t, 1)
		subject := csPushWorker(t, st.target, "a")
		first, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		again, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo})
		if err != nil || again.Digest != first.Digest {
			t.Fatalf("attesting twice changed the manifest (%v)", err)
		}
		newer := `{"authority":"oa-test-authority","checks":[],"run":2}`
		if _, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(newer), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		res, err := VerifyAttestation(ctx, st.target, subject, auth.verifier, ConformancePredicateType)
		if err != nil || res.Verified != 2 || string(res.Predicate) != newer {
			t.Fatalf("result %+v, %v", res, err)
		}
		if ok, _ := st.target.Exists(ctx, first); ok {
			t.Fatal("superseded .att manifest still stored")
		}
	})
}

// TestAttestRefusesBadPredicate: a predicate that is not a JSON object or
// a type that is not a URI is refused and nothing is written.
func TestAttestRefusesBadPredicate(t *testing.T) {
	st := csLayout(t)
	ctx := context.Background()
	subject := csPushWorker(t, st.target, "a")
	s := csKey(t, 1).signer
	for _, p := range []string{`[1,2]`, `"report"`, `{"a":`, ``, `null`} {
		_, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(p), WriteOptions{Signer: s, Repository: st.repo})
		csWantCode(t, err, blocking.AttestationPredicateBad)
	}
	_, err := Attest(ctx, st.target, subject, "conformance", []byte(csPredicate), WriteOptions{Signer: s, Repository: st.repo})
	csWantCode(t, err, blocking.AttestationPredicateBad)
	_, err = Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: s, Repository: "x"})
	csWantCode(t, err, blocking.ReferenceInvalid)
	if _, err := st.target.Resolve(ctx, oci.AttestationTag(subject.Digest)); err == nil {
		t.Fatal("a refused Attest wrote an attestation")
	}
}

// TestVerifyAttestationRefusals covers each refusal with its exact code.
func TestVerifyAttestationRefusals(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		pub, auth, other := csKey(t, 0), csKey(t, 1), csKey(t, 2)
		a, b := csPushWorker(t, st.target, "a"), csPushWorker(t, st.target, "b")
		verify := func(subject ocispec.Descriptor, v *Verifier, opts ...AttestationOption) error {
			_, err := VerifyAttestation(ctx, st.target, subject, v, ConformancePredicateType, opts...)
			return err
		}
		csWantCode(t, verify(a, auth.verifier), blocking.AttestationMissing)

		bAtt, err := Attest(ctx, st.target, b, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		csWantCode(t, verify(b, other.verifier), blocking.AttestationUntrusted)

		// b's attestation copied under a's tag: verifies, names b.
		if err := st.target.Tag(ctx, bAtt, oci.AttestationTag(a.Digest)); err != nil {
			t.Fatal(err)
		}
		csWantCode(t, verify(a, auth.verifier), blocking.AttestationWrongSubject)

		// the authority key is the publisher key.
		csWantCode(t, verify(b, pub.verifier, WithPublisher(pub.verifier)), blocking.AttestationByPublisher)

		// another predicate type only.
		c := csPushWorker(t, st.target, "c")
		if _, err := Attest(ctx, st.target, c, "https://example.com/provenance/v1", []byte(`{}`), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		csWantCode(t, verify(c, auth.verifier), blocking.AttestationPredicateBad)

		// a publisher-signed conformance attestation next to the
		// authority's: refused, whatever else is there.
		if _, err := Attest(ctx, st.target, c, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		if err := verify(c, auth.verifier, WithPublisher(pub.verifier)); err != nil {
			t.Fatalf("authority attestation: %v", err)
		}
		if _, err := Attest(ctx, st.target, c, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: pub.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		csWantCode(t, verify(c, auth.verifier, WithPublisher(pub.verifier)), blocking.AttestationByPublisher)
		if err := verify(c, auth.verifier); err != nil {
			t.Fatalf("without the publisher option: %v", err)
		}
	})
}

// TestVerifyAttestationPublisherOtherType: the publisher's own
// attestations of other types (provenance, say) are not refused.
func TestVerifyAttestationPublisherOtherType(t *testing.T) {
	st := csLayout(t)
	ctx := context.Background()
	pub, auth := csKey(t, 0), csKey(t, 1)
	a := csPushWorker(t, st.target, "a")
	if _, err := Attest(ctx, st.target, a, "https://slsa.dev/provenance/v1", []byte(`{"builder":"x"}`), WriteOptions{Signer: pub.signer, Repository: st.repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier)); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyAttestationForged: envelopes changed by someone without the
// key (digests consistent) are untrusted; a signed statement whose
// predicate is not an object is predicate_invalid.
func TestVerifyAttestationForged(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		auth := csKey(t, 1)
		a := csPushWorker(t, st.target, "a")
		if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		_, m := csManifest(t, st.target, oci.AttestationTag(a.Digest))
		orig := m.Layers[0]
		env := csBlob(t, st.target, orig)

		// one byte of the statement changed, envelope re-encoded.
		var e map[string]any
		if err := json.Unmarshal(env, &e); err != nil {
			t.Fatal(err)
		}
		stmt, _ := base64.StdEncoding.DecodeString(e["payload"].(string))
		stmt = []byte(strings.Replace(string(stmt), `"passed":true`, `"passed":false`, 1))
		e["payload"] = base64.StdEncoding.EncodeToString(stmt)
		tampered, _ := json.Marshal(e)
		csForge(t, st.target, oci.AttestationTag(a.Digest), []cosignLayer{newCosignLayer(oci.DSSEMediaType, tampered, orig.Annotations)})
		_, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType)
		csWantCode(t, err, blocking.AttestationUntrusted)

		// signed by the authority, but the predicate is an array.
		bad := []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"` + ConformancePredicateType + `","subject":[{"name":"x/y","digest":{"sha256":"` + a.Digest.Encoded() + `"}}],"predicate":[1]}`)
		badEnv, err := sigdsse.WrapSigner(auth.signer.sv, InTotoPayloadType).SignMessage(bytes.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		csForge(t, st.target, oci.AttestationTag(a.Digest), []cosignLayer{newCosignLayer(oci.DSSEMediaType, badEnv, orig.Annotations)})
		_, err = VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType)
		csWantCode(t, err, blocking.AttestationPredicateBad)
	})
}

// TestVerifyAttestationTamperedBlob: an envelope byte changed on disk is
// layer_digest_mismatch.
func TestVerifyAttestationTamperedBlob(t *testing.T) {
	st := csLayout(t)
	ctx := context.Background()
	auth := csKey(t, 1)
	a := csPushWorker(t, st.target, "a")
	if _, err := Attest(ctx, st.target, a, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo}); err != nil {
		t.Fatal(err)
	}
	_, m := csManifest(t, st.target, oci.AttestationTag(a.Digest))
	csCorruptBlob(t, st.layout, m.Layers[0])
	_, err := VerifyAttestation(ctx, st.target, a, auth.verifier, ConformancePredicateType)
	csWantCode(t, err, blocking.LayerDigestMismatch)
}
