package signing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// TestVerifySignatureMissing: no .sig tag, and a .sig manifest without
// signature layers, are signature_missing.
func TestVerifySignatureMissing(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		subject := csPushWorker(t, st.target, "a")
		_, err := VerifySignature(ctx, st.target, subject, csKey(t, 0).verifier)
		csWantCode(t, err, blocking.SignatureMissing)
		csForge(t, st.target, oci.SignatureTag(subject.Digest), nil)
		_, err = VerifySignature(ctx, st.target, subject, csKey(t, 0).verifier)
		csWantCode(t, err, blocking.SignatureMissing)
	})
}

// TestVerifySignatureOtherKey: a signature by another key is untrusted.
func TestVerifySignatureOtherKey(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		subject := csPushWorker(t, st.target, "a")
		if _, err := Sign(ctx, st.target, subject, WriteOptions{Signer: csKey(t, 0).signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		_, err := VerifySignature(ctx, st.target, subject, csKey(t, 1).verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)
	})
}

// TestVerifySignatureCopied: another artifact's .sig manifest copied under
// this artifact's tag verifies with the key but names the other digest.
// Signing this artifact afterwards must not delete the other one's
// signature, which shares the copied manifest.
func TestVerifySignatureCopied(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k := csKey(t, 0)
		a, b := csPushWorker(t, st.target, "a"), csPushWorker(t, st.target, "b")
		bSig, err := Sign(ctx, st.target, b, WriteOptions{Signer: k.signer, Repository: st.repo})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.target.Tag(ctx, bSig, oci.SignatureTag(a.Digest)); err != nil {
			t.Fatal(err)
		}
		_, err = VerifySignature(ctx, st.target, a, k.verifier)
		csWantCode(t, err, blocking.SignatureWrongSubject)
		if _, err := Sign(ctx, st.target, a, WriteOptions{Signer: k.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySignature(ctx, st.target, a, k.verifier); err != nil {
			t.Fatalf("a after signing: %v", err)
		}
		if _, err := VerifySignature(ctx, st.target, b, k.verifier); err != nil {
			t.Fatalf("b's signature was lost: %v", err)
		}
	})
}

// TestVerifySignatureForged: layers rewritten by someone with push access
// but without the key (digests consistent) are untrusted.
func TestVerifySignatureForged(t *testing.T) {
	csEachStore(t, func(t *testing.T, st csStore) {
		ctx := context.Background()
		k := csKey(t, 0)
		a, b := csPushWorker(t, st.target, "a"), csPushWorker(t, st.target, "b")
		if _, err := Sign(ctx, st.target, b, WriteOptions{Signer: k.signer, Repository: st.repo}); err != nil {
			t.Fatal(err)
		}
		_, m := csManifest(t, st.target, oci.SignatureTag(b.Digest))
		orig := m.Layers[0]
		pl := csBlob(t, st.target, orig)

		// b's signature over a payload rewritten to name a.
		forged := []byte(strings.Replace(string(pl), b.Digest.Encoded(), a.Digest.Encoded(), 1))
		csForge(t, st.target, oci.SignatureTag(a.Digest), []cosignLayer{newCosignLayer(oci.SimpleSigningMediaType, forged, orig.Annotations)})
		_, err := VerifySignature(ctx, st.target, a, k.verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)

		// b's payload with one signature byte flipped.
		sig, _ := base64.StdEncoding.DecodeString(orig.Annotations[SignatureAnnotation])
		sig[len(sig)-1] ^= 0x01
		ann := map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)}
		csForge(t, st.target, oci.SignatureTag(b.Digest), []cosignLayer{newCosignLayer(oci.SimpleSigningMediaType, pl, ann)})
		_, err = VerifySignature(ctx, st.target, b, k.verifier)
		csWantCode(t, err, blocking.SignatureUntrusted)

		// a payload of another type, signed with the key, vouches for
		// nothing: it does not name this digest as a cosign signature.
		other := []byte(`{"critical":{"identity":{"docker-reference":"x/y"},"image":{"docker-manifest-digest":"` + a.Digest.String() + `"},"type":"atomic container signature"},"optional":null}`)
		otherSig, err := k.signer.sv.SignMessage(bytes.NewReader(other))
		if err != nil {
			t.Fatal(err)
		}
		ann = map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(otherSig)}
		csForge(t, st.target, oci.SignatureTag(a.Digest), []cosignLayer{newCosignLayer(oci.SimpleSigningMediaType, other, ann)})
		_, err = VerifySignature(ctx, st.target, a, k.verifier)
		csWantCode(t, err, blocking.SignatureWrongSubject)
	})
}

// TestVerifySignatureTamperedBlob: a stored signature layer or manifest
// whose bytes no longer match their digest is layer_digest_mismatch.
func TestVerifySignatureTamperedBlob(t *testing.T) {
	for _, part := range []string{"layer", "manifest"} {
		t.Run(part, func(t *testing.T) {
			st := csLayout(t)
			ctx := context.Background()
			k := csKey(t, 0)
			subject := csPushWorker(t, st.target, "a")
			sigDesc, err := Sign(ctx, st.target, subject, WriteOptions{Signer: k.signer, Repository: st.repo})
			if err != nil {
				t.Fatal(err)
			}
			_, m := csManifest(t, st.target, oci.SignatureTag(subject.Digest))
			victim := m.Layers[0]
			if part == "manifest" {
				victim = sigDesc
			}
			csCorruptBlob(t, st.layout, victim)
			_, err = VerifySignature(ctx, st.target, subject, k.verifier)
			csWantCode(t, err, blocking.LayerDigestMismatch)
			if strings.Contains(err.Error(), st.layout) {
				t.Fatal("refusal echoes a local path")
			}
		})
	}
}

// TestVerifyIndependent: the same key as publisher and authority is
// refused; two keys pass.
func TestVerifyIndependent(t *testing.T) {
	p, a := csKey(t, 0).verifier, csKey(t, 1).verifier
	if err := VerifyIndependent(p, a); err != nil {
		t.Fatal(err)
	}
	again, err := LoadVerifier(csKey(t, 0).pub)
	if err != nil {
		t.Fatal(err)
	}
	csWantCode(t, VerifyIndependent(p, again), blocking.AttestationByPublisher)
	if err := VerifyIndependent(nil, a); err == nil || blocking.Refusals(err) != nil {
		t.Fatalf("nil key: %v; want a program fault", err)
	}
}

func TestVerifyRefusesASignatureLayerClaimedHuge(t *testing.T) {
	ctx := context.Background()
	res := exampletest.Compile(t, examples.Default)
	st := csLayout(t)
	desc, err := oci.Push(ctx, st.target, res.Worker, res.IR, "v1", oci.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := csKey(t, 0)
	if _, err := Sign(ctx, st.target, desc, WriteOptions{Signer: key.signer, Repository: "oa.local/test"}); err != nil {
		t.Fatal(err)
	}
	_, m := csManifest(t, st.target, oci.SignatureTag(desc.Digest))
	m.Layers[0].Size = 1 << 40
	b, _ := json.Marshal(m)
	if _, err := oras.TagBytes(ctx, st.target, ocispec.MediaTypeImageManifest, b, oci.SignatureTag(desc.Digest)); err != nil {
		t.Fatal(err)
	}
	target, err := oci.Open(ctx, oci.Ref{Layout: st.layout, Repository: "test"}, oci.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifySignature(ctx, target, desc, key.verifier)
	csWantCode(t, err, blocking.LayerTooLarge)
}
