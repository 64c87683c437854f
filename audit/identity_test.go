package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/sigstoretest"
)

// TestAdmissionSignerByIdentity: an auditor trusting the publisher and
// the authority by identity accepts an admission only when it recorded
// signers whose certificates match those identities; another identity,
// or a signer trusted by key, is audit_identity_mismatch.
func TestAdmissionSignerByIdentity(t *testing.T) {
	root, err := signing.LoadTrustedRoot(sigstoretest.NewCA(t).TrustedRoot(t, true))
	if err != nil {
		t.Fatal(err)
	}
	const iss = "https://token.actions.githubusercontent.com"
	verifier := func(re string) *signing.Verifier {
		v, err := signing.NewIdentityVerifier(signing.Identity{Issuer: iss, SubjectRegexp: re}, root, signing.IdentityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	pub, auth := verifier("^https://github\\.com/acme/workers/"), verifier("^https://github\\.com/acme/conformance/")
	signer := func(subject string) *signing.CertIdentity {
		return &signing.CertIdentity{Subject: subject, Issuer: iss}
	}
	status := func(p, a admit.KeyRef) *admit.Status {
		return &admit.Status{State: admit.Active, Record: &admit.Record{Publisher: p, Authorities: []admit.KeyRef{a}}}
	}
	good := admit.KeyRef{Name: "ci", KeyID: "identity:sha256:x", Signer: signer("https://github.com/acme/workers/.github/workflows/release.yml@refs/tags/v1")}
	goodAuth := admit.KeyRef{Name: "conf", KeyID: "identity:sha256:y", Signer: signer("https://github.com/acme/conformance/.github/workflows/check.yml@refs/heads/main")}
	if err := admissionErr(status(good, goodAuth), pub, auth); err != nil {
		t.Fatalf("matching signers refused: %v", err)
	}
	for name, st := range map[string]*admit.Status{
		"another publisher identity": status(admit.KeyRef{Name: "ci", Signer: signer("https://github.com/evil/workers/x")}, goodAuth),
		"publisher trusted by key":   status(admit.KeyRef{Name: "p", KeyID: "sha256:abc"}, goodAuth),
		"another authority":          status(good, admit.KeyRef{Name: "conf", Signer: signer("https://github.com/acme/workers/x")}),
		"issuer differs":             status(admit.KeyRef{Name: "ci", Signer: &signing.CertIdentity{Subject: good.Signer.Subject, Issuer: "https://evil.example"}}, goodAuth),
	} {
		err := admissionErr(st, pub, auth)
		if l := blocking.Refusals(err); len(l) != 1 || l[0].Code != blocking.AuditIdentityMismatch {
			t.Errorf("%s: %v, want audit_identity_mismatch", name, err)
		}
	}
}

// TestTrustedRootsDocument: a bundle's trusted roots document must name
// each root once with the digest of its bytes.
func TestTrustedRootsDocument(t *testing.T) {
	raw := []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`)
	good := TrustedRootDoc{Name: "roots/ci.json", Digest: "sha256:" + sha256Hex(raw), Bytes: raw}
	for name, c := range map[string]struct {
		roots []TrustedRootDoc
		ok    bool
	}{
		"good":         {[]TrustedRootDoc{good}, true},
		"wrong digest": {[]TrustedRootDoc{{Name: good.Name, Digest: "sha256:" + sha256Hex([]byte("x")), Bytes: raw}}, false},
		"named twice":  {[]TrustedRootDoc{good, good}, false},
		"not a list":   {nil, false},
	} {
		doc, err := canonical.Marshal(c.roots)
		if err != nil {
			t.Fatal(err)
		}
		if c.roots == nil {
			doc = []byte(`{"name":"x"}`)
		}
		b := &bundle{docs: map[string][]byte{DocTrustedRoots: doc}}
		err = b.decodeRoots()
		if c.ok != (err == nil) || (err != nil && blocking.Refusals(err)[0].Code != blocking.AuditBundleInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if c.ok && string(b.roots[good.Name]) != string(raw) {
			t.Errorf("%s: roots %v", name, b.roots)
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
