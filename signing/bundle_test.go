package signing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// TestBundleSignAttestVerify writes a signature and an attestation in the
// sigstore bundle format and verifies both, in a layout (through its
// subject links, also after reopening it) and on a registry without the
// referrers API (through the `sha256-<hex>` referrers tag).
func TestBundleSignAttestVerify(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		pub, auth := csKey(t, 0), csKey(t, 1)
		subject := csPushWorker(t, st.target, "a")
		sigDesc, err := Sign(ctx, st.target, subject, WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true})
		if err != nil {
			t.Fatal(err)
		}
		if again, err := Sign(ctx, st.target, subject, WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true}); err != nil || again.Digest != sigDesc.Digest {
			t.Fatalf("signing the same statement again wrote %v (%v); want the existing %s", again.Digest, err, sigDesc.Digest)
		}
		if _, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: auth.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		target := st.target
		if st.layout != "" {
			reopened, err := orasoci.New(st.layout)
			if err != nil {
				t.Fatal(err)
			}
			target = reopened
		} else if _, err := st.target.Resolve(ctx, "sha256-"+subject.Digest.Encoded()); err != nil {
			t.Fatalf("no referrers tag on a registry without the referrers API: %v", err)
		}
		sig, err := VerifySignature(ctx, target, subject, pub.verifier)
		if err != nil || sig.Form != FormBundle || sig.Verified != 1 || sig.Manifest.Digest != sigDesc.Digest {
			t.Fatalf("signature: %+v, %v", sig, err)
		}
		att, err := VerifyAttestation(ctx, target, subject, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
		if err != nil || att.Form != FormBundle || att.Verified != 1 || !csSameJSON(att.Predicate, csPredicate) {
			t.Fatalf("attestation: %+v, %v", att, err)
		}
		// A signature bundle is not an attestation, nor the other way round.
		_, err = VerifySignature(ctx, target, subject, auth.verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)
		_, err = VerifyAttestation(ctx, target, subject, pub.verifier, ConformancePredicateType)
		csWantCode(t, err, blocking.AttestationUntrusted)
		// The publisher attesting its own conformance in a bundle is refused
		// even beside the authority's attestation.
		if _, err := Attest(ctx, st.target, subject, ConformancePredicateType, []byte(csPredicate), WriteOptions{Signer: pub.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		_, err = VerifyAttestation(ctx, st.target, subject, auth.verifier, ConformancePredicateType, WithPublisher(pub.verifier))
		csWantCode(t, err, blocking.AttestationByPublisher)
	})
}

// TestBundleBesideLegacy: both forms of one key's signature count, and the
// legacy one still verifies when a bundle is junk.
func TestBundleBesideLegacy(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k := csKey(t, 0)
		subject := csPushWorker(t, st.target, "a")
		if _, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		if _, err := pushBundle(ctx, st.target, subject, []byte(`{"mediaType":"not a bundle"}`), nil); err != nil {
			t.Fatal(err)
		}
		res, err := VerifySignature(ctx, st.target, subject, k.verifier)
		if err != nil || res.Form != FormLegacy || res.Verified != 1 {
			t.Fatalf("legacy beside a junk bundle: %+v, %v", res, err)
		}
		if _, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo, Bundle: true}); err != nil {
			t.Fatal(err)
		}
		res, err = VerifySignature(ctx, st.target, subject, k.verifier)
		if err != nil || res.Form != FormBundle || res.Verified != 2 {
			t.Fatalf("both forms: %+v, %v", res, err)
		}
	})
}

// TestBundleTampering: each way a bundle can fail has its named code.
func TestBundleTampering(t *testing.T) {
	type tamper struct {
		name string
		// push writes the bad bundle for subject (other is another
		// artifact in the same target).
		push    func(t *testing.T, st csStore, subject, other ocispec.Descriptor) error
		sigCode blocking.Code
		attCode blocking.Code
	}
	right, wrong := csKey(t, 0), csKey(t, 2)
	for _, tc := range []tamper{
		{"wrong key", func(t *testing.T, st csStore, subject, _ ocispec.Descriptor) error {
			return csPushStatements(t, st, subject, subject, wrong.signer, nil)
		}, blocking.SignatureUntrusted, blocking.AttestationUntrusted},
		{"other digest in the statement", func(t *testing.T, st csStore, subject, other ocispec.Descriptor) error {
			return csPushStatements(t, st, subject, other, right.signer, nil)
		}, blocking.SignatureWrongSubject, blocking.AttestationWrongSubject},
		{"payload edited after signing", func(t *testing.T, st csStore, subject, _ ocispec.Descriptor) error {
			return csPushStatements(t, st, subject, subject, right.signer, func(payload []byte) []byte {
				return bytes.Replace(payload, []byte(`"sha256":"`), []byte(`"sha256" : "`), 1)
			})
		}, blocking.SignatureUntrusted, blocking.AttestationUntrusted},
		{"another artifact's bundle under this subject", func(t *testing.T, st csStore, subject, other ocispec.Descriptor) error {
			// The whole bundle of other, verbatim, in a manifest naming subject.
			raw, err := csSignedBundle(st, other, CosignSignPredicateType, right.signer)
			if err != nil {
				return err
			}
			if _, err := pushBundle(context.Background(), st.target, subject, raw, nil); err != nil {
				return err
			}
			raw, err = csSignedBundle(st, other, ConformancePredicateType, right.signer)
			if err != nil {
				return err
			}
			_, err = pushBundle(context.Background(), st.target, subject, raw, nil)
			return err
		}, blocking.SignatureWrongSubject, blocking.AttestationWrongSubject},
		{"message signature over another manifest", func(t *testing.T, st csStore, subject, other ocispec.Descriptor) error {
			if err := csPushMessageSignature(t, st, subject, csBlob(t, st.target, other), right.signer); err != nil {
				return err
			}
			return csPushStatements(t, st, subject, subject, wrong.signer, nil)
		}, blocking.SignatureWrongSubject, blocking.AttestationUntrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csEachStore(t, func(t *testing.T, st csStore) {
				ctx := context.Background()
				subject, other := csPushWorker(t, st.target, "a"), csPushWorker(t, st.target, "b")
				if err := tc.push(t, st, subject, other); err != nil {
					t.Fatal(err)
				}
				_, err := VerifySignature(ctx, st.target, subject, right.verifier)
				csWantCode(t, err, tc.sigCode)
				_, err = VerifyAttestation(ctx, st.target, subject, right.verifier, ConformancePredicateType)
				csWantCode(t, err, tc.attCode)
			})
		})
	}
}

// TestBundleMessageSignature: a message-signature bundle over the exact
// manifest bytes verifies.
func TestBundleMessageSignature(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		k := csKey(t, 0)
		subject := csPushWorker(t, st.target, "a")
		if err := csPushMessageSignature(t, st, subject, csBlob(t, st.target, subject), k.signer); err != nil {
			t.Fatal(err)
		}
		res, err := VerifySignature(context.Background(), st.target, subject, k.verifier)
		if err != nil || res.Form != FormBundle {
			t.Fatalf("%+v, %v", res, err)
		}
		_, err = VerifySignature(context.Background(), st.target, subject, csKey(t, 1).verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)
	})
}

// TestBundleTamperedBlob: a bundle layer whose bytes no longer match its
// digest refuses layer_digest_mismatch; a referrer that is gone is
// skipped.
func TestBundleTamperedBlob(t *testing.T) {
	st := csLayout(t)
	ctx := context.Background()
	k := csKey(t, 0)
	subject := csPushWorker(t, st.target, "a")
	desc, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo, Bundle: true})
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(csBlob(t, st.target, desc), &m); err != nil {
		t.Fatal(err)
	}
	csCorruptBlob(t, st.layout, m.Layers[0])
	_, err = VerifySignature(ctx, st.target, subject, k.verifier)
	csWantCode(t, err, blocking.LayerDigestMismatch)
	csCorruptBlob(t, st.layout, desc)
	_, err = VerifySignature(ctx, st.target, subject, k.verifier)
	csWantCode(t, err, blocking.LayerDigestMismatch)
	if err := os.Remove(filepath.Join(st.layout, "blobs", "sha256", desc.Digest.Encoded())); err != nil {
		t.Fatal(err)
	}
	_, err = VerifySignature(ctx, st.target, subject, k.verifier)
	csWantCode(t, err, blocking.SignatureMissing)
}

// csSignedBundle is a DSSE bundle by s over a statement of predicateType
// naming named.
func csSignedBundle(st csStore, named ocispec.Descriptor, predicateType string, s *Signer) ([]byte, error) {
	predicate := []byte("{}")
	if predicateType != CosignSignPredicateType {
		predicate = []byte(csPredicate)
	}
	stmt, err := bundleStatement(st.repo, named, predicateType, predicate)
	if err != nil {
		return nil, err
	}
	return newDSSEBundle(stmt, s)
}

// csPushStatements pushes, as referrers of subject, a signature and a
// conformance attestation bundle by s whose statements name named; edit,
// when set, changes each statement after it is signed.
func csPushStatements(t *testing.T, st csStore, subject, named ocispec.Descriptor, s *Signer, edit func([]byte) []byte) error {
	t.Helper()
	for _, pt := range []string{CosignSignPredicateType, ConformancePredicateType} {
		raw, err := csSignedBundle(st, named, pt, s)
		if err != nil {
			return err
		}
		if edit != nil {
			var pb protobundle.Bundle
			if err := protojson.Unmarshal(raw, &pb); err != nil {
				return err
			}
			env := pb.GetDsseEnvelope()
			edited := edit(env.Payload)
			if bytes.Equal(edited, env.Payload) {
				t.Fatal("the edit changed nothing")
			}
			env.Payload = edited
			if raw, err = protojson.Marshal(&pb); err != nil {
				return err
			}
		}
		if _, err := pushBundle(context.Background(), st.target, subject, raw, nil); err != nil {
			return err
		}
	}
	return nil
}

// csPushMessageSignature pushes a message-signature bundle by s over
// message as a referrer of subject.
func csPushMessageSignature(t *testing.T, st csStore, subject ocispec.Descriptor, message []byte, s *Signer) error {
	t.Helper()
	sig, err := s.SignBytes(message)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(message)
	pb := &protobundle.Bundle{
		MediaType: oci.BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: s.KeyID()}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}},
	}
	raw, err := protojson.Marshal(pb)
	if err != nil {
		return err
	}
	_, err = pushBundle(context.Background(), st.target, subject, raw, map[string]string{bundleContentAnnotation: "message-signature"})
	return err
}

// csSameJSON reports whether got and want decode to the same value.
func csSameJSON(got []byte, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && csJSONEqual(a, b)
}
