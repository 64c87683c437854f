package signing

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/memo"
)

// PasswordEnv is the environment variable cosign reads a key password
// from; oa reads the same one.
const PasswordEnv = "COSIGN_PASSWORD"

// Signer is a decrypted cosign private key, ready to sign payloads.
type Signer struct {
	sv       signature.SignerVerifier
	verifier *Verifier
}

// Verifier is a public key in cosign's format, ready to verify
// signatures and attestations.
type Verifier struct {
	v     signature.Verifier
	pub   crypto.PublicKey
	keyID string
	// ident is set, and v and pub nil, when the verifier trusts a
	// certificate identity instead of a key (NewIdentityVerifier).
	ident *identityCheck
}

// GenerateKeys makes a new ECDSA P-256 key pair exactly as
// `cosign generate-key-pair` does: the private key PEM is an
// "ENCRYPTED SIGSTORE PRIVATE KEY" sealed with password, the public key PEM
// a PKIX "PUBLIC KEY".
func GenerateKeys(password []byte) (privatePEM, publicPEM []byte, err error) {
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return password, nil })
	if err != nil {
		return nil, nil, fmt.Errorf("generating key pair: %w", err)
	}
	return kb.PrivateBytes, kb.PublicBytes, nil
}

// LoadSigner decrypts a cosign private key file with password. It refuses
// key_invalid when the bytes are not a cosign private key and
// key_password_wrong when the password does not open it.
//
// A key opened once is remembered for the life of the process, keyed by a
// digest of the exact key bytes and password: the scrypt in cosign's key
// format costs about 0.1 s (seconds on a loaded machine) every time, and a
// process that opens one host or fleet key several times (fleet
// provisioning, a coordinator's stages, the test suite) would pay it each
// time for the same key.
func LoadSigner(privatePEM, password []byte) (*Signer, error) {
	return openedSigners.open(privatePEM, password, loadSigner)
}

// openedSigners holds the signers LoadSigner decrypted (see keyMemo).
var openedSigners keyMemo[*Signer]

// keyMemo remembers what was decrypted from a private key file, keyed by
// a digest of the exact key bytes and password (memo.IDOf), so no two
// (key, password) pairs share an entry. At most maxRemembered entries
// are kept, so a process that opens many distinct keys does not grow
// without bound; past that, keys are decrypted every time.
type keyMemo[V any] struct {
	m     sync.Map
	count atomic.Int64
}

const maxRemembered = 256

// open returns what open decrypted from privatePEM with password before,
// or runs it now and remembers a success (never a refusal).
func (k *keyMemo[V]) open(privatePEM, password []byte, open func(privatePEM, password []byte) (V, error)) (V, error) {
	id := memo.IDOf(privatePEM, password)
	if v, ok := k.m.Load(id); ok {
		return v.(V), nil
	}
	v, err := open(privatePEM, password)
	if err == nil && k.count.Add(1) <= maxRemembered {
		k.m.Store(id, v)
	}
	return v, err
}

// loadSigner decrypts privatePEM with password, every time.
func loadSigner(privatePEM, password []byte) (*Signer, error) {
	if err := checkPrivatePEM(privatePEM); err != nil {
		return nil, err
	}
	sv, err := cosign.LoadPrivateKey(privatePEM, password, nil)
	if err != nil {
		return nil, classifyKeyError(err)
	}
	return signerOf(sv)
}

// signerOf is the Signer of sv, with the verifier of its public key.
func signerOf(sv signature.SignerVerifier) (*Signer, error) {
	pub, err := sv.PublicKey()
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key has no usable public key")
	}
	v, err := newVerifier(pub)
	if err != nil {
		return nil, err
	}
	return &Signer{sv: sv, verifier: v}, nil
}

// checkPrivatePEM refuses anything that is not one PEM block of a cosign
// private key type.
func checkPrivatePEM(b []byte) error {
	block, _ := pem.Decode(b)
	if block == nil {
		return blocking.New(blocking.KeyInvalid, "the private key is not PEM")
	}
	if block.Type != cosign.SigstorePrivateKeyPemType && block.Type != cosign.CosignPrivateKeyPemType {
		return blocking.New(blocking.KeyInvalid, "the private key PEM is not an encrypted cosign private key")
	}
	return nil
}

// classifyKeyError turns cosign's key loading errors into refusals. The
// secretbox seal cannot tell a wrong password from a damaged ciphertext;
// both read as a wrong password.
func classifyKeyError(err error) error {
	if strings.Contains(err.Error(), "decryption failed") {
		return blocking.New(blocking.KeyPasswordWrong, "the password does not decrypt the private key")
	}
	return blocking.New(blocking.KeyInvalid, "the private key cannot be decrypted or parsed")
}

// LoadVerifier reads a cosign public key file (PEM "PUBLIC KEY", PKIX),
// as `cosign verify --key` does. It refuses key_invalid otherwise.
// A key parsed once is remembered (verified.go).
func LoadVerifier(publicPEM []byte) (*Verifier, error) {
	id := memo.IDOf(publicPEM)
	if v, ok := loadedVerifiers.Get(id); ok {
		return v, nil
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(publicPEM)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the public key is not a PEM PUBLIC KEY")
	}
	v, err := newVerifier(pub)
	if err == nil {
		loadedVerifiers.Put(id, v)
	}
	return v, err
}

// newVerifier wraps pub with SHA-256 hashing, cosign's default.
func newVerifier(pub crypto.PublicKey) (*Verifier, error) {
	id, err := keyID(pub)
	if err != nil {
		return nil, err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the public key type is not supported")
	}
	return &Verifier{v: v, pub: pub, keyID: id}, nil
}

// keyID is "sha256:<hex>" of the PKIX DER encoding of pub.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", blocking.New(blocking.KeyInvalid, "the public key cannot be encoded as PKIX")
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// KeyID is the stable id of the signer's public key: "sha256:<hex>" of its
// PKIX DER encoding, the same as the matching Verifier's.
func (s *Signer) KeyID() string { return s.verifier.keyID }

// PublicKey is the signer's public key.
func (s *Signer) PublicKey() crypto.PublicKey { return s.verifier.pub }

// Verifier returns the verifier of the signer's own public key.
func (s *Signer) Verifier() *Verifier { return s.verifier }

// KeyID is the stable id of the public key: "sha256:<hex>" of its PKIX DER
// encoding. Admission records name keys by it. For an identity verifier it
// is "identity:sha256:<hex>" of the identity, its trusted root's digest and
// whether a certificate valid now is accepted.
func (v *Verifier) KeyID() string { return v.keyID }

// PublicKey is the verifier's public key.
func (v *Verifier) PublicKey() crypto.PublicKey { return v.pub }

// PublicPEM is the public key as a cosign public key file.
func (v *Verifier) PublicPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(v.pub)
}

// ReadPassword returns the key password the way cosign's CLI finds it:
// $COSIGN_PASSWORD when it is set, even to the empty string; otherwise
// what prompt returns.
func ReadPassword(prompt func() ([]byte, error)) ([]byte, error) {
	if pw, ok := os.LookupEnv(PasswordEnv); ok {
		return []byte(pw), nil
	}
	if prompt == nil {
		return nil, errors.New("no password: set " + PasswordEnv + " or give a prompt")
	}
	return prompt()
}

// SignBytes signs msg (ECDSA over its SHA-256), for records a host signs
// itself: admissions, revocations, receipts. The signature is remembered
// as verified with the signer's public key (verified.go): a host reads
// back what it just signed — the checkpoint a seal extends was signed by
// the seal before it — and a signature made with a key verifies with it.
func (s *Signer) SignBytes(msg []byte) ([]byte, error) {
	sig, err := s.sv.SignMessage(bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	verified.Put(verifiedID(s.verifier.keyID, sig, msg), struct{}{})
	return sig, nil
}

// VerifyBytes checks a signature SignBytes made over msg. A signature
// that verified once with this key is not verified again (verified.go).
func (v *Verifier) VerifyBytes(sig, msg []byte) error {
	if v.v == nil {
		return errors.New("signing: an identity verifier cannot verify host records")
	}
	id := verifiedID(v.keyID, sig, msg)
	if _, ok := verified.Get(id); ok {
		return nil
	}
	if err := v.v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
		return err
	}
	verified.Put(id, struct{}{})
	return nil
}
