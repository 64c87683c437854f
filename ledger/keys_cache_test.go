package ledger

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/signing"
)

// TestReceiptKeyCache: the receipt key pair is made once; its first
// opening leaves a sealed copy (0600) that later starts load instead of
// decrypting the cosign file; a changed copy, another host secret or a
// replaced key file makes the copy unusable, and the key then comes from
// the cosign file, as it always does, and the copy is made again.
func TestReceiptKeyCache(t *testing.T) {
	home := t.TempDir()
	secret := bytes.Repeat([]byte{7}, 32)
	first, err := receiptSigner(home, secret)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := readFile(t, home, ReceiptKeyFile)
	if fi, err := os.Stat(filepath.Join(home, ReceiptKeyCacheFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the sealed copy: %v %v", fi, err)
	}
	if s := openReceiptKeyCache(home, secret, keyFile); s == nil || s.KeyID() != first.KeyID() {
		t.Fatal("the sealed copy does not open to the receipt key")
	}
	again, err := receiptSigner(home, secret)
	if err != nil || again.KeyID() != first.KeyID() || !bytes.Equal(readFile(t, home, ReceiptKeyFile), keyFile) {
		t.Fatalf("a second start changed the receipt key: %v", err)
	}
	assertSigns(t, home, again)

	// Another secret, or a changed byte: the copy does not open.
	if openReceiptKeyCache(home, bytes.Repeat([]byte{8}, 32), keyFile) != nil {
		t.Fatal("the sealed copy opened with another secret")
	}
	cache := readFile(t, home, ReceiptKeyCacheFile)
	cache[len(cache)-1] ^= 1
	writeFile(t, home, ReceiptKeyCacheFile, cache)
	if openReceiptKeyCache(home, secret, keyFile) != nil {
		t.Fatal("a changed sealed copy opened")
	}
	s, err := receiptSigner(home, secret)
	if err != nil || s.KeyID() != first.KeyID() {
		t.Fatalf("with a changed copy: %v", err)
	}
	if openReceiptKeyCache(home, secret, keyFile) == nil {
		t.Fatal("the sealed copy was not made again")
	}

	// The key pair replaced (a rotation): the copy of the old key is
	// stale, and the new key signs.
	priv, pub, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, home, ReceiptKeyFile, priv)
	writeFile(t, home, ReceiptPubFile, pub)
	rotated, err := receiptSigner(home, secret)
	if err != nil || rotated.KeyID() == first.KeyID() {
		t.Fatalf("after a rotation the old key still signs: %v", err)
	}
	assertSigns(t, home, rotated)
	// A copy whose key is not the one of the public key file is refused.
	_, otherPub, err := signing.GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, home, ReceiptPubFile, otherPub)
	if openReceiptKeyCache(home, secret, priv) != nil {
		t.Fatal("a sealed copy opened whose key is not the public key file's")
	}
}

// assertSigns checks that s signs what the receipt public key verifies.
func assertSigns(t *testing.T, home string, s *signing.Signer) {
	t.Helper()
	v, err := receiptVerifier(home)
	if err != nil || v == nil {
		t.Fatalf("receipt verifier: %v", err)
	}
	msg := make([]byte, 32)
	_, _ = rand.Read(msg)
	sig, err := s.SignBytes(msg)
	if err != nil || v.VerifyBytes(sig, msg) != nil {
		t.Fatalf("the receipt key does not sign for its public key: %v", err)
	}
}

func readFile(t *testing.T, home, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, home, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fuzzSecret is the coordinator secret the fuzz test seals with.
var fuzzSecret = []byte("0123456789abcdef0123456789abcdef")

// FuzzOpenSealedReceiptKey: whatever bytes the cache file holds, opening
// them never panics and yields a signer only for the one copy sealed with
// the secret for the key file.
func FuzzOpenSealedReceiptKey(f *testing.F) {
	privPEM := []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nfixed\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
	home := f.TempDir()
	priv, _, err := signing.GenerateKeys(nil)
	if err != nil {
		f.Fatal(err)
	}
	der, err := signing.DecryptPrivateKey(priv, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "keys"), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := writeReceiptKeyCache(home, fuzzSecret, privPEM, der); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(home, ReceiptKeyCacheFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:12])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, sealed []byte) {
		s := openSealedReceiptKey(fuzzSecret, privPEM, sealed)
		if bytes.Equal(sealed, good) {
			if s == nil {
				t.Fatal("the sealed copy did not open")
			}
			return
		}
		if s != nil {
			t.Fatalf("bytes not sealed with the secret opened: %x", sealed)
		}
	})
}
