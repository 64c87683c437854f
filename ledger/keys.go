package ledger

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/signing"
)

// Files of the ledger under $OA_HOME, made on first use.
const (
	// ReceiptKeyFile signs receipts; a key of its own, so receipts can be
	// checked by someone who is not trusted with admissions.
	ReceiptKeyFile = "keys/receipt.key"
	// ReceiptPubFile is the receipt key's public half, which audit
	// bundles carry and verifiers load.
	ReceiptPubFile = "keys/receipt.pub"
	// SecretFile is the host's coordinator secret: it keys the run
	// records' MACs, the verify mark and the sealed receipt key copy, and
	// the coordinator's input fingerprints and request states.
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

// hostSecret returns the host's coordinator secret, made on first use
// (Ledger.Secret keeps it).
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

// receiptSigner returns the receipt signer, made on first use
// (Ledger.ReceiptSigner keeps it).
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
func receiptSigner(home string, secret []byte) (*signing.Signer, error) {
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
// loading (see ReceiptSigner).
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

// receiptVerifier reads the receipt public key, nil when the host has
// none yet.
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
