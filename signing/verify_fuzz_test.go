package signing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/opencontainers/go-digest"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/oa-dev/oa/oci"
)

// csFuzzSubject is the manifest digest the fuzz targets verify against.
var csFuzzSubject = digest.FromString("fuzz subject")

// FuzzVerifySignaturePayload signs arbitrary payload bytes with a trusted
// key and checks that a signature layer passes only when the payload is a
// cosign simple-signing payload naming the subject digest.
func FuzzVerifySignaturePayload(f *testing.F) {
	k := csKey(f, 0)
	f.Fuzz(func(t *testing.T, pl []byte) {
		sig, err := k.signer.sv.SignMessage(bytes.NewReader(pl))
		if err != nil {
			t.Fatal(err)
		}
		layer := newCosignLayer(oci.SimpleSigningMediaType, pl, map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)})
		got, _, _ := checkSignatureLayer(layer.desc, pl, csFuzzSubject, k.verifier)
		var sci payload.SimpleContainerImage
		named := json.Unmarshal(pl, &sci) == nil && sci.Critical.Type == payload.CosignSignatureType &&
			sci.Critical.Image.DockerManifestDigest == csFuzzSubject.String()
		if (got == verdictOK) != named {
			t.Fatalf("verdict %d for payload naming subject=%v", got, named)
		}
		if other, _, _ := checkSignatureLayer(layer.desc, pl, csFuzzSubject, csKey(t, 2).verifier); other != verdictUntrusted {
			t.Fatal("a payload verified with another key")
		}
		_ = claimedSubject(oci.SimpleSigningMediaType, pl)
	})
}

// FuzzVerifyStatement signs arbitrary statement bytes in a DSSE envelope
// with a trusted key and checks that an envelope passes only for an
// in-toto statement about the subject, of the conformance type, with a
// JSON object predicate.
func FuzzVerifyStatement(f *testing.F) {
	k := csKey(f, 1)
	f.Fuzz(func(t *testing.T, stmt []byte) {
		env, err := sigdsse.WrapSigner(k.signer.sv, InTotoPayloadType).SignMessage(bytes.NewReader(stmt))
		if err != nil {
			t.Fatal(err)
		}
		got, predicate, _ := checkEnvelope(envelope{blob: env}, csFuzzSubject, k.verifier, ConformancePredicateType)
		if got != verdictOK {
			return
		}
		st, err := parseStatement(stmt)
		if err != nil || st.PredicateType != ConformancePredicateType || !namesDigest(st.Subject, csFuzzSubject) || !isJSONObject(predicate) {
			t.Fatalf("passed a statement that should not: %q", stmt)
		}
	})
}

// FuzzUnverifiedEnvelope feeds arbitrary envelope bytes (not signed by the
// key) to verification and housekeeping: nothing may panic or pass.
func FuzzUnverifiedEnvelope(f *testing.F) {
	k := csKey(f, 1)
	f.Fuzz(func(t *testing.T, env []byte) {
		if got, _, _ := checkEnvelope(envelope{blob: env}, csFuzzSubject, k.verifier, ConformancePredicateType); got != verdictUntrusted {
			t.Fatalf("unsigned envelope reached verdict %d", got)
		}
		_ = claimedSubject(oci.DSSEMediaType, env)
		_, _ = unverifiedStatement(env)
	})
}

// FuzzUnverifiedBundle feeds arbitrary bundle-layer bytes to the bundle
// parser and checks, verifying with a key that signed none of the seeds:
// nothing may panic, and nothing may verify as a signature or attestation.
func FuzzUnverifiedBundle(f *testing.F) {
	k := csKey(f, 2)
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := sigBundle{parsed: parseBundle(raw)}
		_ = b.kind()
		if got, _ := checkBundleSignature(b, csFuzzSubject, k.verifier); got != verdictUntrusted {
			t.Fatalf("an unsigned bundle reached signature verdict %d", got)
		}
		if got, _, _ := checkEnvelope(envelope{blob: b.envelope()}, csFuzzSubject, k.verifier, ConformancePredicateType); got != verdictUntrusted {
			t.Fatalf("an unsigned bundle reached attestation verdict %d", got)
		}
	})
}
