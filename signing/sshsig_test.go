package signing_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/signing"
)

func newSSHSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSSHSignatureRoundTrip: what SignSSH writes verifies with the key, in
// its namespace, over its message, and nothing else does.
func TestSSHSignatureRoundTrip(t *testing.T) {
	s, other := newSSHSigner(t), newSSHSigner(t)
	msg := []byte("statement\n")
	sig, err := signing.SignSSH(s, "oa-decision", msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := signing.VerifySSHSignature(s.PublicKey(), "oa-decision", msg, sig); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	for name, check := range map[string]func() error{
		"other key":       func() error { return signing.VerifySSHSignature(other.PublicKey(), "oa-decision", msg, sig) },
		"other namespace": func() error { return signing.VerifySSHSignature(s.PublicKey(), "file", msg, sig) },
		"other message": func() error {
			return signing.VerifySSHSignature(s.PublicKey(), "oa-decision", []byte("statement 2\n"), sig)
		},
		"not armoured": func() error { return signing.VerifySSHSignature(s.PublicKey(), "oa-decision", msg, []byte("x")) },
		"flipped byte": func() error {
			bad := bytes.Clone(sig)
			bad[len(bad)/2] ^= 1
			return signing.VerifySSHSignature(s.PublicKey(), "oa-decision", msg, bad)
		},
	} {
		if check() == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

// TestSSHSignatureInterop: a signature the real ssh-keygen -Y sign makes
// verifies here, and one made here verifies with ssh-keygen -Y verify.
func TestSSHSignatureInterop(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("no ssh-keygen on this machine")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "ada@clinic", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pubLine, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParseSSHPublicKey(string(pubLine))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("{\"decision\":\"approve\"}\n")
	stmt := filepath.Join(dir, "statement")
	if err := os.WriteFile(stmt, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", key, "-n", "oa-decision", stmt).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	sig, err := os.ReadFile(stmt + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if err := signing.VerifySSHSignature(pub, "oa-decision", msg, sig); err != nil {
		t.Fatalf("ssh-keygen's signature: %v", err)
	}
	if signing.VerifySSHSignature(pub, "file", msg, sig) == nil {
		t.Fatal("ssh-keygen's signature verified in another namespace")
	}

	// The other way: ssh-keygen -Y verify accepts what SignSSH writes.
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := signing.SignSSH(signer, "oa-decision", msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stmt+".ours", ours, 0o600); err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed")
	if err := os.WriteFile(allowed, append([]byte("ada@clinic "), pubLine...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "ada@clinic", "-n", "oa-decision", "-s", stmt+".ours")
	cmd.Stdin = bytes.NewReader(msg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify of ours: %v\n%s", err, out)
	}
}
