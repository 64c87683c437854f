package coordinator

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/signing"
)

// Files of the coordinator under $OA_HOME, made on first use.
const (
	// ReceiptKeyFile signs receipts; a key of its own, so receipts can be
	// checked by someone who is not trusted with admissions.
	ReceiptKeyFile = "keys/receipt.key"
	ReceiptPubFile = "keys/receipt.pub"
	// SecretFile keys the input fingerprints and request states.
	SecretFile = "keys/coordinator.secret"
)

// createOnce writes data to path unless it exists, without ever replacing
// a file another process made first, and without ever showing a half
// written one (the bytes go to a temporary file that is then linked into
// place); it returns what the file holds.
func createOnce(path string, data []byte, mode os.FileMode) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return os.ReadFile(path)
}

// hostSecret returns the host's coordinator secret, made on first use.
func hostSecret(home string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	b, err := createOnce(filepath.Join(home, SecretFile), fresh, 0o600)
	if err != nil {
		return nil, fmt.Errorf("coordinator secret: %w", err)
	}
	if len(b) != 32 {
		return nil, errors.New("coordinator secret: the file is not 32 bytes")
	}
	return b, nil
}

// receiptKeys returns the receipt signer, made on first use.
//
// ReceiptKeyFile is cosign's format with an empty password, as the host
// key is: a host signs without a person at the keyboard. Opening that
// format costs two scrypt derivations' worth of CPU and 32 MiB each time
// (generating one costs as much again), which was nearly all of a
// session start. So the key is generated only when the file is missing,
// and after its first opening it is kept sealed in ReceiptKeyCacheFile,
// from which later starts load it without any key derivation.
//
// The security argument, stated plainly: scrypt over an empty password
// protects nothing against whoever can read ReceiptKeyFile; what protects
// the key is that the file is 0600 in the 0700 keys folder. The sealed
// copy is 0600 in the same folder, sealed (AES-256-GCM) under a key
// derived from SecretFile, which is 0600 there too — so it is exactly as
// protected as ReceiptKeyFile and no more: the seal adds that a copy of
// the cache taken without the secret is useless, and that a changed cache
// is refused. The seal is bound to the digest of ReceiptKeyFile, so
// replacing the key file makes the cache stale (it is remade from the new
// file), and the key it yields must be the one of ReceiptPubFile.
func receiptKeys(home string, secret []byte) (*signing.Signer, error) {
	keyPath := filepath.Join(home, ReceiptKeyFile)
	privPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		fresh, _, gerr := signing.GenerateKeys(nil)
		if gerr != nil {
			return nil, gerr
		}
		privPEM, err = createOnce(keyPath, fresh, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if s := openReceiptKeyCache(home, secret, privPEM); s != nil {
		return s, nil
	}
	der, err := signing.DecryptPrivateKey(privPEM, nil)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	s, err := signing.SignerFromPKCS8(der)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	// The public key is always derived from the private one, so a
	// missing one (a crash between the two files) is made again.
	pub, err := s.Verifier().PublicPEM()
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if _, err := createOnce(filepath.Join(home, ReceiptPubFile), pub, 0o644); err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	// Best effort: without a cache the next start decrypts again.
	_ = writeReceiptKeyCache(home, secret, privPEM, der)
	return s, nil
}

// ReceiptKeyCacheFile holds the receipt private key sealed for fast
// loading (see receiptKeys).
const ReceiptKeyCacheFile = "keys/receipt.key.sealed"

// receiptCacheDomain separates the cache's sealing key from every other
// use of the coordinator secret.
const receiptCacheDomain = "oa.receipt-key-cache/v1\n"

// receiptCacheAEAD is AES-256-GCM under HMAC-SHA256(secret, domain).
func receiptCacheAEAD(secret []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(receiptCacheDomain))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// receiptCacheAD binds a sealed copy to the exact key file it came from.
func receiptCacheAD(privPEM []byte) []byte {
	sum := sha256.Sum256(privPEM)
	return append([]byte(receiptCacheDomain), sum[:]...)
}

// openReceiptKeyCache returns the signer sealed in the cache, or nil when
// there is no cache, or it does not open (another secret, another key
// file, changed bytes), or its key is not the one of ReceiptPubFile.
func openReceiptKeyCache(home string, secret, privPEM []byte) *signing.Signer {
	sealed, err := os.ReadFile(filepath.Join(home, ReceiptKeyCacheFile))
	if err != nil || len(sealed) > maxReceiptCache {
		return nil
	}
	pubPEM, err := os.ReadFile(filepath.Join(home, ReceiptPubFile))
	if err != nil {
		return nil
	}
	s := openSealedReceiptKey(secret, privPEM, sealed)
	if s == nil {
		return nil
	}
	if v, err := signing.LoadVerifier(pubPEM); err != nil || v.KeyID() != s.KeyID() {
		return nil
	}
	return s
}

// maxReceiptCache bounds the cache read: a P-256 PKCS #8 key sealed is
// under 200 bytes.
const maxReceiptCache = 4096

// openSealedReceiptKey opens sealed bytes (nonce, then ciphertext) into a
// signer: the pure half of openReceiptKeyCache, and what the fuzz test
// feeds.
func openSealedReceiptKey(secret, privPEM, sealed []byte) *signing.Signer {
	aead, err := receiptCacheAEAD(secret)
	if err != nil || len(sealed) < aead.NonceSize() {
		return nil
	}
	der, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], receiptCacheAD(privPEM))
	if err != nil {
		return nil
	}
	s, err := signing.SignerFromPKCS8(der)
	if err != nil {
		return nil
	}
	return s
}

// writeReceiptKeyCache seals der and puts it in place atomically (a
// package atomicfile), mode 0600.
func writeReceiptKeyCache(home string, secret, privPEM, der []byte) error {
	aead, err := receiptCacheAEAD(secret)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	sealed := aead.Seal(nonce, nonce, der, receiptCacheAD(privPEM))
	path := filepath.Join(home, ReceiptKeyCacheFile)
	return atomicfile.Write(path, sealed, 0o600)
}

// receiptVerifier reads the receipt public key.
func receiptVerifier(home string) (*signing.Verifier, error) {
	b, err := os.ReadFile(filepath.Join(home, ReceiptPubFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return signing.LoadVerifier(b)
}

// fingerprint is the keyed fingerprint of a request: inputs are never
// stored, only this.
func fingerprint(secret []byte, parts ...[]byte) string {
	m := hmac.New(sha256.New, secret)
	for _, p := range parts {
		fmt.Fprintf(m, "%d:", len(p))
		m.Write(p)
	}
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sealed is the payload of a request state.
type sealed struct {
	Value   json.RawMessage `json:"v"`
	Expires int64           `json:"exp"`
	Nonce   string          `json:"n"`
}

const stateDomain = "oa.request-state/v1\n"

// SealState seals v into an opaque token that expires after ttl and can
// be opened once: HMAC with the host's coordinator secret, so a client
// cannot make one up or change one.
func (c *Coordinator) SealState(v any, ttl time.Duration) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	payload, err := json.Marshal(sealed{b, c.now().Add(ttl).Unix(), base64.RawURLEncoding.EncodeToString(nonce)})
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(stateDomain))
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// OpenState verifies a token made by SealState, refuses it when forged,
// expired or already used, and decodes its value into v. A token is used
// up by opening it.
func (c *Coordinator) OpenState(ctx context.Context, token string, v any) error {
	s, err := openSealed(c.secret, token, c.now())
	if err != nil {
		return err
	}
	exp := time.Unix(s.Expires, 0)
	if err := storeOf(c.host).UseState(ctx, s.Nonce, exp, c.now()); errors.Is(err, store.ErrConflict) {
		return blocking.New(blocking.RequestStateInvalid, "the request state was used before")
	} else if err != nil {
		return err
	}
	if err := json.Unmarshal(s.Value, v); err != nil {
		return blocking.New(blocking.RequestStateInvalid, "the request state is malformed")
	}
	return nil
}

// openSealed checks a token's form, MAC and expiry (not its single use):
// the pure half of OpenState, and what FuzzOpenSealed feeds.
func openSealed(secret []byte, token string, now time.Time) (*sealed, error) {
	refuse := func(why string) error { return blocking.New(blocking.RequestStateInvalid, "%s", why) }
	// Only the characters SealState writes: Go's base64 decoder skips CR
	// and LF, which would let many strings stand for one token.
	if strings.IndexFunc(token, func(r rune) bool { return !isTokenRune(r) }) >= 0 {
		return nil, refuse("the request state is malformed")
	}
	p64, m64, ok := strings.Cut(token, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil {
		return nil, refuse("the request state is malformed")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(stateDomain))
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return nil, refuse("the request state was not made by this host")
	}
	var s sealed
	if err := json.Unmarshal(payload, &s); err != nil || s.Nonce == "" {
		return nil, refuse("the request state is malformed")
	}
	if !now.Before(time.Unix(s.Expires, 0)) {
		return nil, refuse("the request state has expired")
	}
	return &s, nil
}

// isTokenRune reports whether r may appear in a sealed token: the
// base64url alphabet and the dot between payload and MAC.
func isTokenRune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}
