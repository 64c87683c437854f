// Package sigstoretest is test plumbing for trust by certificate
// identity: a private certificate authority (root, intermediate, leaves
// with a SAN identity and the OIDC issuer extension 1.3.6.1.4.1.57264.1.8),
// an RFC 3161 timestamp authority served over HTTP (what
// `cosign sign --timestamp-server-url` posts to), and the sigstore
// trusted_root.json naming them. Everything is made in the test; nothing
// is contacted.
package sigstoretest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Fulcio's OIDC issuer extensions: OIDCIssuerV2 (1.3.6.1.4.1.57264.1.8)
// holds it as a DER UTF8String; OIDCIssuerV1 (…1.1, deprecated but still
// issued by Fulcio, and the only one cosign v2 reads for legacy
// signatures) as raw bytes.
var (
	OIDCIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	OIDCIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
)

// Password is the password of every leaf key file this package writes.
const Password = "sigstoretest"

// CA is a private certificate authority with a timestamp authority.
type CA struct {
	Root, Intermediate *x509.Certificate
	rootKey, interKey  *ecdsa.PrivateKey
	TSARoot, TSALeaf   *x509.Certificate
	tsaRootKey, tsaKey *ecdsa.PrivateKey

	mu     sync.Mutex
	serial int64
	// stampAt is the time the timestamp authority puts in its tokens;
	// zero means now.
	stampAt time.Time
}

// NewCA makes a CA (root → intermediate) and a TSA (root → leaf), all
// valid from ten years ago for twenty years.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca := &CA{serial: 10}
	from, to := time.Now().Add(-10*365*24*time.Hour), time.Now().Add(10*365*24*time.Hour)
	ca.Root, ca.rootKey = ca.authority(t, "oa test root", nil, nil, from, to, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, nil)
	ca.Intermediate, ca.interKey = ca.authority(t, "oa test intermediate", ca.Root, ca.rootKey, from, to, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning})
	ca.TSARoot, ca.tsaRootKey = ca.authority(t, "oa test tsa root", nil, nil, from, to, x509.KeyUsageCertSign, nil)
	ca.TSALeaf, ca.tsaKey = ca.tsaLeaf(t, from, to)
	return ca
}

func (ca *CA) next() *big.Int {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.serial++
	return big.NewInt(ca.serial)
}

// authority makes a CA certificate signed by parent (self-signed when nil).
func (ca *CA) authority(t testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, from, to time.Time, usage x509.KeyUsage, eku []x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: ca.next(), Subject: pkix.Name{CommonName: cn, Organization: []string{"oa test"}},
		NotBefore: from, NotAfter: to, KeyUsage: usage, ExtKeyUsage: eku,
		BasicConstraintsValid: true, IsCA: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	return create(t, tmpl, parent, &key.PublicKey, parentKey), key
}

func (ca *CA) tsaLeaf(t testing.TB, from, to time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: ca.next(), Subject: pkix.Name{CommonName: "oa test tsa"},
		NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}},
	}
	return create(t, tmpl, ca.TSARoot, &key.PublicKey, ca.tsaRootKey), key
}

func create(t testing.TB, tmpl, parent *x509.Certificate, pub crypto.PublicKey, parentKey crypto.Signer) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Leaf is a signing certificate with its key, as files cosign reads.
type Leaf struct {
	Cert *x509.Certificate
	// CertPEM, ChainPEM (intermediate then root), KeyPEM (a cosign
	// encrypted private key under Password) and PubPEM.
	CertPEM, ChainPEM, KeyPEM, PubPEM []byte
}

// Leaf issues a code-signing certificate from the intermediate for
// subject (a URI SAN when it parses as one with a scheme, else an email)
// and issuer (in both issuer extensions, as Fulcio issues them), valid
// from notBefore to notAfter.
func (ca *CA) Leaf(t testing.TB, subject, issuer string, notBefore, notAfter time.Time) *Leaf {
	t.Helper()
	return issue(t, ca.next(), subject, issuer, true, notBefore, notAfter, ca.Intermediate, ca.interKey, ca.Intermediate, ca.Root)
}

// LeafV2Only is Leaf with the issuer in extension 1.3.6.1.4.1.57264.1.8
// only.
func (ca *CA) LeafV2Only(t testing.TB, subject, issuer string, notBefore, notAfter time.Time) *Leaf {
	t.Helper()
	return issue(t, ca.next(), subject, issuer, false, notBefore, notAfter, ca.Intermediate, ca.interKey, ca.Intermediate, ca.Root)
}

// issue makes a leaf signed by parent, its key a fresh cosign key pair.
func issue(t testing.TB, serial *big.Int, subject, issuer string, withV1 bool, notBefore, notAfter time.Time, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, chain ...*x509.Certificate) *Leaf {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(Password), nil })
	if err != nil {
		t.Fatal(err)
	}
	priv, pub := kb.PrivateBytes, kb.PublicBytes
	pubKey, err := cryptoutils.UnmarshalPEMToPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	issuerDER, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: OIDCIssuerV2, Value: issuerDER}},
	}
	if withV1 {
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: OIDCIssuerV1, Value: []byte(issuer)})
	}
	if u, err := parseURI(subject); err == nil {
		tmpl.URIs = u
	} else {
		tmpl.EmailAddresses = []string{subject}
	}
	cert := create(t, tmpl, parent, pubKey, parentKey)
	certPEM, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	chainPEM, err := cryptoutils.MarshalCertificatesToPEM(chain)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: cert, CertPEM: certPEM, ChainPEM: chainPEM, KeyPEM: priv, PubPEM: pub}
}

// TrustedRoot is the trusted_root.json of the CA and, when withTSA, the
// timestamp authority; no transparency log and no CT log.
func (ca *CA) TrustedRoot(t testing.TB, withTSA bool) []byte {
	t.Helper()
	cas := []root.CertificateAuthority{&root.FulcioCertificateAuthority{
		Root: ca.Root, Intermediates: []*x509.Certificate{ca.Intermediate},
		ValidityPeriodStart: ca.Root.NotBefore, URI: "https://ca.oa.test",
	}}
	var tsas []root.TimestampingAuthority
	if withTSA {
		tsas = []root.TimestampingAuthority{&root.SigstoreTimestampingAuthority{
			Root: ca.TSARoot, Leaf: ca.TSALeaf, ValidityPeriodStart: ca.TSARoot.NotBefore, URI: "https://tsa.oa.test",
		}}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, tsas, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StampAt makes the timestamp authority put at in its tokens (the zero
// time: the current time), as a TSA's clock would have read then.
func (ca *CA) StampAt(at time.Time) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.stampAt = at
}

// Stamp is the DER TimeStampResp for a TimeStampReq.
func (ca *CA) Stamp(req []byte) ([]byte, error) {
	r, err := timestamp.ParseRequest(req)
	if err != nil {
		return nil, err
	}
	ca.mu.Lock()
	at := ca.stampAt
	ca.mu.Unlock()
	if at.IsZero() {
		at = time.Now()
	}
	ts := timestamp.Timestamp{
		HashAlgorithm: r.HashAlgorithm, HashedMessage: r.HashedMessage, Time: at, Nonce: r.Nonce,
		Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}, ExtraExtensions: r.Extensions,
		AddTSACertificate: r.Certificates,
	}
	return ts.CreateResponseWithOpts(ca.TSALeaf, ca.tsaKey, crypto.SHA256)
}

// ServeTSA serves the timestamp authority over HTTP on loopback for the
// test and returns its URL.
func (ca *CA) ServeTSA(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		resp, err := ca.Stamp(body)
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/timestamp-reply")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// WriteFiles writes the leaf's certificate, chain and key into dir and
// returns their paths.
func (l *Leaf) WriteFiles(t testing.TB, dir string) (cert, chain, key string) {
	t.Helper()
	cert, chain, key = filepath.Join(dir, "leaf.crt"), filepath.Join(dir, "chain.crt"), filepath.Join(dir, "leaf.key")
	for p, b := range map[string][]byte{cert: l.CertPEM, chain: l.ChainPEM, key: l.KeyPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, chain, key
}

// parseURI reads subject as a URI SAN when it has a scheme.
func parseURI(subject string) ([]*url.URL, error) {
	u, err := url.Parse(subject)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return nil, errors.New("not a URI")
	}
	return []*url.URL{u}, nil
}
