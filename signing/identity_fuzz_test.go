package signing

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/oa-dev/oa/internal/sigstoretest"
	"github.com/oa-dev/oa/oci"
)

// FuzzLegacyCertificateLayer feeds arbitrary certificate, timestamp and
// log-entry annotations of a legacy signature layer to an identity
// verifier: it must never panic, and never accept a layer whose
// signature was not made by the certificate's key inside a proven time.
// Seeds: a real certificate of the test CA (testdata/fuzz holds more).
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
	f.Add(string(leaf.CertPEM), `{"SignedRFC3161Timestamp":"AAAA"}`, `{"SignedEntryTimestamp":"AAAA","Payload":{"body":"e30=","integratedTime":1,"logIndex":1,"logID":"00"}}`, []byte("payload"))
	f.Add(string(leaf.CertPEM), "", "", []byte(`{"critical":{"type":"cosign container image signature","image":{"docker-manifest-digest":"`+csFuzzSubject.String()+`"}}}`))
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "{", "[", []byte{})
	f.Fuzz(func(t *testing.T, certPEM, stamp, rekor string, blob []byte) {
		ann := map[string]string{
			SignatureAnnotation:                  base64.StdEncoding.EncodeToString([]byte("not a signature")),
			static.CertificateAnnotationKey:      certPEM,
			static.RFC3161TimestampAnnotationKey: stamp,
			static.BundleAnnotationKey:           rekor,
		}
		layer := newCosignLayer(oci.SimpleSigningMediaType, blob, ann)
		if got, _, _ := checkSignatureLayer(layer.desc, blob, csFuzzSubject, v); got == verdictOK {
			t.Fatal("a layer whose signature was not made by its certificate's key verified")
		}
		e := envelope{form: FormLegacy, blob: blob, annotations: ann}
		if got, _, _ := checkEnvelope(e, csFuzzSubject, v, ConformancePredicateType); got == verdictOK {
			t.Fatal("an envelope that no certificate signed verified")
		}
	})
}
