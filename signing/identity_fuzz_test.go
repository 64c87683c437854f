package signing

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// FuzzLegacyCertificateLayer feeds arbitrary certificate, timestamp and
// log-entry annotations and payloads of a legacy signature layer, signed
// by a real leaf key of the test CA, to an identity verifier that accepts
// a certificate valid now: it must never panic, and accept a layer only
// when its certificate is the leaf's, no timestamp or log entry is there
// (a damaged proof never counts as none) and the payload names the
// subject. Seeds: the real certificate (testdata/fuzz holds more).
func FuzzLegacyCertificateLayer(f *testing.F) {
	ca := sigstoretest.NewCA(f)
	now := time.Now()
	leaf := ca.Leaf(f, "ci@acme.example", "https://issuer.example", now.Add(-time.Hour), now.Add(time.Hour))
	tr, err := LoadTrustedRoot(ca.TrustedRoot(f, true))
	if err != nil {
		f.Fatal(err)
	}
	v, err := NewIdentityVerifier(Identity{SubjectRegexp: ".", IssuerRegexp: "."}, tr, IdentityOptions{CertificateValidNow: true})
	if err != nil {
		f.Fatal(err)
	}
	naming := []byte(`{"critical":{"type":"cosign container image signature","image":{"docker-manifest-digest":"` + csFuzzSubject.String() + `"}}}`)
	// The real certificate, a payload naming the subject: accepted only
	// without proofs; a damaged timestamp or log entry refuses it.
	f.Add(string(leaf.CertPEM), "", "", naming)
	f.Add(string(leaf.CertPEM), `{"SignedRFC3161Timestamp":"AAAA"}`, "", naming)
	f.Add(string(leaf.CertPEM), "", `{"SignedEntryTimestamp":"AAAA","Payload":{"body":"e30=","integratedTime":1,"logIndex":1,"logID":"00"}}`, naming)
	f.Add(string(leaf.CertPEM), "", `{"Payload":{"body":7}}`, naming)
	f.Add(string(leaf.CertPEM), "", "", []byte("payload"))
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "{", "[", []byte{})
	leafSigner, err := cosign.LoadPrivateKey(leaf.KeyPEM, []byte(sigstoretest.Password), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, certPEM, stamp, rekor string, blob []byte) {
		sig, err := leafSigner.SignMessage(bytes.NewReader(blob))
		if err != nil {
			t.Fatal(err)
		}
		ann := map[string]string{
			SignatureAnnotation:                  base64.StdEncoding.EncodeToString(sig),
			static.CertificateAnnotationKey:      certPEM,
			static.RFC3161TimestampAnnotationKey: stamp,
			static.BundleAnnotationKey:           rekor,
		}
		layer := newCosignLayer(oci.SimpleSigningMediaType, blob, ann)
		got, _, signer := checkSignatureLayer(layer.desc, blob, csFuzzSubject, v)
		if got == verdictOK && (certPEM != string(leaf.CertPEM) || stamp != "" || rekor != "" || claimedSubject(oci.SimpleSigningMediaType, blob) != csFuzzSubject || signer == nil) {
			t.Fatalf("accepted: cert is the leaf's %v, stamp %q, rekor %q", certPEM == string(leaf.CertPEM), stamp, rekor)
		}
		e := envelope{form: FormLegacy, blob: blob, annotations: ann}
		if got, _, _ := checkEnvelope(e, csFuzzSubject, v, ConformancePredicateType); got == verdictOK {
			t.Fatal("an envelope that no certificate signed verified")
		}
	})
}
