package signing

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/oa-dev/oa/blocking"
)

// Trust by certificate identity: a signer who has no long-lived key signs
// with a short-lived certificate (Fulcio-style: the identity in the Subject
// Alternative Name, the OIDC issuer in extension 1.3.6.1.4.1.57264.1.8)
// issued by a CA of a sigstore trusted root. sigstore-go's verifier checks
// the chain, the transparency-log entries and RFC 3161 timestamps against
// the trusted root and matches the identity; oa only says what to trust and
// reads the signature forms cosign writes.

// Identity is a certificate identity to trust, with the meaning of cosign's
// flags: exactly one of Subject (`--certificate-identity`) or SubjectRegexp
// (`--certificate-identity-regexp`), and exactly one of Issuer
// (`--certificate-oidc-issuer`) or IssuerRegexp
// (`--certificate-oidc-issuer-regexp`). Regular expressions are RE2 and
// unanchored, as cosign's are.
type Identity struct {
	Issuer        string `json:"issuer,omitempty"`
	IssuerRegexp  string `json:"issuer_regexp,omitempty"`
	Subject       string `json:"subject,omitempty"`
	SubjectRegexp string `json:"subject_regexp,omitempty"`
}

// Check refuses identity_invalid unless exactly one of each pair is given
// and every regular expression compiles.
func (id Identity) Check() error {
	switch {
	case (id.Subject == "") == (id.SubjectRegexp == ""):
		return blocking.New(blocking.IdentityInvalid, "give exactly one of a subject and a subject regular expression")
	case (id.Issuer == "") == (id.IssuerRegexp == ""):
		return blocking.New(blocking.IdentityInvalid, "give exactly one of an issuer and an issuer regular expression")
	}
	for _, re := range []string{id.SubjectRegexp, id.IssuerRegexp} {
		if _, err := regexp.Compile(re); err != nil {
			return blocking.New(blocking.IdentityInvalid, "a regular expression does not compile")
		}
	}
	return nil
}

// String renders the identity as a person reads it.
func (id Identity) String() string {
	subject, issuer := id.Subject, id.Issuer
	if subject == "" {
		subject = "~" + id.SubjectRegexp
	}
	if issuer == "" {
		issuer = "~" + id.IssuerRegexp
	}
	return subject + " @ " + issuer
}

// CertIdentity is the identity a verified certificate names: its Subject
// Alternative Name and its OIDC issuer.
type CertIdentity struct {
	Subject string `json:"subject"`
	Issuer  string `json:"issuer"`
}

// String renders the identity as "subject @ issuer".
func (c CertIdentity) String() string { return c.Subject + " @ " + c.Issuer }

// MaxTrustedRootBytes bounds a trusted_root.json read by oa.
const MaxTrustedRootBytes = 4 << 20

// TrustedRoot is a sigstore trusted root (trusted_root.json): certificate
// authorities, transparency logs and timestamp authorities, each with its
// validity window, and the digest of the exact file bytes.
type TrustedRoot struct {
	material *root.TrustedRoot
	digest   string
}

// LoadTrustedRoot parses a trusted_root.json. It refuses
// trusted_root_invalid when raw is too large or not a trusted root with at
// least one certificate authority.
func LoadTrustedRoot(raw []byte) (*TrustedRoot, error) {
	if len(raw) > MaxTrustedRootBytes {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root is over %d bytes", MaxTrustedRootBytes)
	}
	tr, err := root.NewTrustedRootFromJSON(raw)
	if err != nil {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the file is not a sigstore trusted_root.json")
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root has no certificate authority")
	}
	sum := sha256.Sum256(raw)
	return &TrustedRoot{material: tr, digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// ReadTrustedRoot reads and parses the trusted_root.json at path: a
// regular file of at most MaxTrustedRootBytes (trusted_root_invalid
// otherwise, naming neither the path nor the system's error text).
func ReadTrustedRoot(path string) (*TrustedRoot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root file cannot be opened")
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root is not a regular file")
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxTrustedRootBytes+1))
	if err != nil {
		return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root file cannot be read")
	}
	return LoadTrustedRoot(raw)
}

// Digest is the sha256 of the trusted root's file bytes: admission records
// name the root by it, so a changed root is a changed policy.
func (r *TrustedRoot) Digest() string { return r.digest }

// IdentityOptions adjust how an identity is verified.
type IdentityOptions struct {
	// CertificateValidNow accepts a certificate valid at the time of
	// verification when the signature carries no transparency-log entry
	// and no timestamp: for private CAs with long-lived certificates. Off,
	// a signature must be proven to be made inside its certificate's
	// window.
	CertificateValidNow bool
}

// identityCheck is what an identity verifier checks with.
type identityCheck struct {
	identity Identity
	matcher  verify.CertificateIdentity
	root     *TrustedRoot
	opts     IdentityOptions
}

// NewIdentityVerifier returns a verifier that trusts signatures made with a
// certificate naming id, chained to a CA of trusted, at a time proven by a
// verified transparency-log entry or a timestamp of a trusted authority
// (or, with opts.CertificateValidNow, valid now). It refuses
// identity_invalid for an incomplete identity.
func NewIdentityVerifier(id Identity, trusted *TrustedRoot, opts IdentityOptions) (*Verifier, error) {
	if err := id.Check(); err != nil {
		return nil, err
	}
	if trusted == nil {
		return nil, blocking.New(blocking.IdentityInvalid, "an identity needs a trusted root")
	}
	m, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegexp, id.Subject, id.SubjectRegexp)
	if err != nil {
		return nil, blocking.New(blocking.IdentityInvalid, "the identity cannot be matched")
	}
	b, err := json.Marshal(struct {
		Identity Identity `json:"identity"`
		Root     string   `json:"root"`
		Now      bool     `json:"validNow"`
	}{id, trusted.digest, opts.CertificateValidNow})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &Verifier{keyID: "identity:sha256:" + hex.EncodeToString(sum[:]), ident: &identityCheck{identity: id, matcher: m, root: trusted, opts: opts}}, nil
}

// Identity returns the identity the verifier trusts, or nil for a key.
func (v *Verifier) Identity() *Identity {
	if v.ident == nil {
		return nil
	}
	id := v.ident.identity
	return &id
}

// TrustedRoot returns the trusted root of an identity verifier, or nil.
func (v *Verifier) TrustedRoot() *TrustedRoot {
	if v.ident == nil {
		return nil
	}
	return v.ident.root
}

// CertificateValidNow reports whether an identity verifier accepts a
// certificate valid now without a proven signing time.
func (v *Verifier) CertificateValidNow() bool {
	return v.ident != nil && v.ident.opts.CertificateValidNow
}

// errNoProvenTime is returned when a signature has neither a tlog entry
// nor a timestamp and valid-now is not allowed.
var errNoProvenTime = errors.New("no transparency-log entry or timestamp")

// verifierFor is a sigstore-go verifier for entity: a transparency-log
// entry, when there is one, must verify, and at least one observer time
// (the log's integrated time or a trusted timestamp) must; with neither,
// the current time only when the options allow it.
func (c *identityCheck) verifierFor(entity verify.SignedEntity) (*verify.Verifier, error) {
	entries, err := entity.TlogEntries()
	if err != nil {
		return nil, err // a log entry that cannot be read never counts as none
	}
	stamps, err := entity.Timestamps()
	if err != nil {
		return nil, err
	}
	var opts []verify.VerifierOption
	if len(entries) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	switch {
	case len(entries) > 0 || len(stamps) > 0:
		opts = append(opts, verify.WithObserverTimestamps(1))
	case c.opts.CertificateValidNow:
		opts = append(opts, verify.WithCurrentTime())
	default:
		return nil, errNoProvenTime
	}
	return verify.NewVerifier(c.root.material, opts...)
}

// check verifies entity (signed with cert) under the identity with
// sigstore-go: transparency log, timestamps, certificate chain at the
// proven time, signature over what artifact names, identity. On failure
// it says what failed first in the order a person fixes it: the CA, the
// identity, the time.
func (c *identityCheck) check(entity verify.SignedEntity, cert *x509.Certificate, artifact verify.ArtifactPolicyOption) (verdict, *CertIdentity) {
	if cert == nil {
		return verdictUntrusted, nil
	}
	if v, err := c.verifierFor(entity); err == nil {
		res, err := v.Verify(entity, verify.NewPolicy(artifact, verify.WithCertificateIdentity(c.matcher)))
		if err == nil && res.Signature != nil && res.Signature.Certificate != nil {
			s := res.Signature.Certificate
			return verdictOK, &CertIdentity{Subject: s.SubjectAlternativeName, Issuer: s.Issuer}
		}
	}
	return c.classify(cert), nil
}

// classify says why a certificate signature whose signature verifies
// with the certificate's key did not verify: a chain outside the trusted
// root, another identity, or else no proven time inside the window.
func (c *identityCheck) classify(cert *x509.Certificate) verdict {
	leaf := *cert
	if _, err := verify.VerifyLeafCertificate(leaf.NotBefore, &leaf, c.root.material); err != nil {
		return verdictCertUntrusted
	}
	summary, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return verdictCertUntrusted
	}
	if _, err := (verify.CertificateIdentities{c.matcher}).Verify(summary); err != nil {
		return verdictIdentityMismatch
	}
	return verdictTimeUnproven
}

// identityRefusal is the refusal for the identity verdicts; what names the
// thing refused ("signature", "attestation").
func identityRefusal(best verdict, what string) error {
	switch best {
	case verdictCertUntrusted:
		return blocking.New(blocking.CertificateUntrusted, "the %s's certificate does not chain to a CA of the trusted root", what)
	case verdictIdentityMismatch:
		return blocking.New(blocking.CertificateIdentityMismatch, "the %s's certificate names another identity or issuer", what)
	case verdictTimeUnproven:
		return blocking.New(blocking.CertificateTimeUnproven, "no verified log time or trusted timestamp puts the %s inside its certificate's window", what)
	}
	return nil
}

// describe is a short account of v for messages: the key id or the
// identity.
func (v *Verifier) describe() string {
	if v.ident != nil {
		return fmt.Sprintf("identity %s", v.ident.identity)
	}
	return v.keyID
}

// Matches reports whether a certificate naming c satisfies the identity,
// with sigstore-go's matching (exact or unanchored RE2, as cosign's): how
// a recorded signer is held to an identity without its certificate.
func (id Identity) Matches(c CertIdentity) bool {
	m, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegexp, id.Subject, id.SubjectRegexp)
	if err != nil {
		return false
	}
	summary := certificate.Summary{SubjectAlternativeName: c.Subject, Extensions: certificate.Extensions{Issuer: c.Issuer}}
	_, err = verify.CertificateIdentities{m}.Verify(summary)
	return err == nil
}
