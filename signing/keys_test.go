package signing

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/oa-dev/oa/blocking"
)

// TestKeysRoundTrip: generated keys are cosign's file format, load back,
// and signer and verifier agree on a KeyID that is sha256 of the PKIX DER.
func TestKeysRoundTrip(t *testing.T) {
	k := csKey(t, 0)
	if b, _ := pem.Decode(k.priv); b == nil || b.Type != cosign.SigstorePrivateKeyPemType {
		t.Fatalf("private key PEM type is not %s", cosign.SigstorePrivateKeyPemType)
	}
	b, _ := pem.Decode(k.pub)
	if b == nil || b.Type != "PUBLIC KEY" {
		t.Fatal("public key is not a PEM PUBLIC KEY")
	}
	sum := sha256.Sum256(b.Bytes)
	want := "sha256:" + hex.EncodeToString(sum[:])
	if k.signer.KeyID() != want || k.verifier.KeyID() != want {
		t.Fatalf("key ids %s / %s; want %s", k.signer.KeyID(), k.verifier.KeyID(), want)
	}
	der, err := x509.MarshalPKIXPublicKey(k.verifier.PublicKey())
	if err != nil || string(der) != string(b.Bytes) {
		t.Fatalf("PublicKey does not round trip: %v", err)
	}
	pemAgain, err := k.verifier.PublicPEM()
	if err != nil || string(pemAgain) != string(k.pub) {
		t.Fatalf("PublicPEM differs from the generated file: %v", err)
	}
	if k.signer.Verifier().KeyID() != want {
		t.Fatal("Signer.Verifier has another key id")
	}
	if csKey(t, 1).verifier.KeyID() == want {
		t.Fatal("two generated keys share a key id")
	}
}

// TestLoadSignerRefusals: a wrong password and garbage are distinct
// refusals, and neither echoes the key or the password.
func TestLoadSignerRefusals(t *testing.T) {
	k := csKey(t, 0)
	_, err := LoadSigner(k.priv, []byte("hunter2-not-it"))
	csWantCode(t, err, blocking.KeyPasswordWrong)
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), csPassword) {
		t.Fatal("refusal echoes a password")
	}
	body := pem.EncodeToMemory(&pem.Block{Type: cosign.SigstorePrivateKeyPemType, Bytes: []byte("not json")})
	for name, garbage := range map[string][]byte{
		"empty":      nil,
		"text":       []byte("hello, I am not a key"),
		"public key": k.pub,
		"bad body":   body,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadSigner(garbage, []byte(csPassword))
			csWantCode(t, err, blocking.KeyInvalid)
		})
	}
}

// TestLoadVerifierRefusals: anything but a PEM public key is key_invalid.
func TestLoadVerifierRefusals(t *testing.T) {
	k := csKey(t, 0)
	for name, garbage := range map[string][]byte{
		"empty":       nil,
		"private key": k.priv,
		"bad der":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadVerifier(garbage)
			csWantCode(t, err, blocking.KeyInvalid)
		})
	}
}

// TestEmptyPassword: cosign allows an empty password; so do we.
func TestEmptyPassword(t *testing.T) {
	priv, _, err := GenerateKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(priv, []byte{}); err != nil {
		t.Fatalf("empty password: %v", err)
	}
	_, err = LoadSigner(priv, []byte("x"))
	csWantCode(t, err, blocking.KeyPasswordWrong)
}

// TestReadPassword: COSIGN_PASSWORD wins even when empty; otherwise the
// prompt answers.
func TestReadPassword(t *testing.T) {
	prompt := func() ([]byte, error) { return []byte("typed"), nil }
	t.Setenv(PasswordEnv, "")
	if pw, err := ReadPassword(prompt); err != nil || string(pw) != "" {
		t.Fatalf("empty env: %q, %v", pw, err)
	}
	t.Setenv(PasswordEnv, "from-env")
	if pw, err := ReadPassword(prompt); err != nil || string(pw) != "from-env" {
		t.Fatalf("env: %q, %v", pw, err)
	}
	csUnsetenv(t, PasswordEnv)
	if pw, err := ReadPassword(prompt); err != nil || string(pw) != "typed" {
		t.Fatalf("prompt: %q, %v", pw, err)
	}
	failing := func() ([]byte, error) { return nil, errors.New("no tty") }
	if _, err := ReadPassword(failing); err == nil {
		t.Fatal("a failing prompt gave a password")
	}
	if _, err := ReadPassword(nil); err == nil {
		t.Fatal("no env and no prompt gave a password")
	}
}

// TestLoadSignerRemembersOnlyTheSameBytes: a key opened once is handed
// back for the same bytes and password, but a wrong password is still
// refused after the right one opened it, and a changed key file is
// decrypted afresh.
func TestLoadSignerRemembersOnlyTheSameBytes(t *testing.T) {
	k := csKey(t, 0)
	first, err := LoadSigner(k.priv, []byte(csPassword))
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadSigner(k.priv, []byte(csPassword))
	if err != nil || again != first {
		t.Fatalf("the same key bytes were not remembered: %v", err)
	}
	_, err = LoadSigner(k.priv, []byte("hunter2-not-it"))
	csWantCode(t, err, blocking.KeyPasswordWrong)
	other := csKey(t, 1)
	s, err := LoadSigner(other.priv, []byte(csPassword))
	if err != nil || s == first || s.KeyID() == first.KeyID() {
		t.Fatalf("another key file gave the remembered signer: %v", err)
	}
	damaged := append([]byte(nil), k.priv...)
	damaged[len(damaged)/2] ^= 0x01
	if _, err := LoadSigner(damaged, []byte(csPassword)); err == nil {
		t.Fatal("damaged key bytes were accepted through the remembered signer")
	}
}
