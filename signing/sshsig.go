package signing

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

// SSH signatures in the format `ssh-keygen -Y sign` writes (OpenSSH's
// PROTOCOL.sshsig). golang.org/x/crypto/ssh parses the keys and verifies
// the inner signature; this file holds only the small wrapper around it:
//
//	blob   = "SSHSIG" uint32(1) string(publickey) string(namespace)
//	         string(reserved) string(hash_algorithm) string(signature)
//	signed = "SSHSIG" string(namespace) string(reserved)
//	         string(hash_algorithm) string(H(message))
//
// armoured as PEM of type "SSH SIGNATURE". The namespace keeps a
// signature made for one purpose from being taken for another.

const (
	sshsigMagic   = "SSHSIG"
	sshsigVersion = 1
	sshsigPEM     = "SSH SIGNATURE"
	// MaxSSHSignature bounds an armoured SSH signature read from anywhere.
	MaxSSHSignature = 16 << 10
)

// ErrSSHSignature is the one error an SSH signature that does not verify
// gives, whatever was wrong with it: the detail is never shown.
var ErrSSHSignature = errors.New("the SSH signature does not verify")

// sshsigBlob is the wire form of an SSH signature.
type sshsigBlob struct {
	Version       uint32
	PublicKey     []byte
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Signature     []byte
}

// sshsigSigned is what the inner signature covers.
type sshsigSigned struct {
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Hash          []byte
}

func sshsigHash(alg string) (hash.Hash, bool) {
	switch alg {
	case "sha256":
		return sha256.New(), true
	case "sha512":
		return sha512.New(), true
	}
	return nil, false
}

func sshsigSignedData(namespace, alg string, message []byte) ([]byte, error) {
	h, ok := sshsigHash(alg)
	if !ok {
		return nil, ErrSSHSignature
	}
	h.Write(message)
	return append([]byte(sshsigMagic), ssh.Marshal(sshsigSigned{Namespace: namespace, HashAlgorithm: alg, Hash: h.Sum(nil)})...), nil
}

// ParseSSHPublicKey parses one public key in the authorized_keys form
// (`ssh-ed25519 AAAA… comment`), the form ssh-keygen writes to a .pub
// file and a host policy names a person's key in.
func ParseSSHPublicKey(line string) (ssh.PublicKey, error) {
	if strings.ContainsAny(strings.TrimSpace(line), "\n\r") {
		return nil, errors.New("more than one line")
	}
	pub, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil || len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("not one SSH public key")
	}
	return pub, nil
}

// SSHFingerprint is the key's SHA256 fingerprint as ssh-keygen -l shows it
// (SHA256:…).
func SSHFingerprint(pub ssh.PublicKey) string { return ssh.FingerprintSHA256(pub) }

// VerifySSHSignature checks that armoured, an SSH signature as
// `ssh-keygen -Y sign -n NAMESPACE` writes it, is pub's signature of
// message in namespace. Any failure is ErrSSHSignature.
func VerifySSHSignature(pub ssh.PublicKey, namespace string, message, armoured []byte) error {
	if len(armoured) > MaxSSHSignature {
		return ErrSSHSignature
	}
	block, rest := pem.Decode(armoured)
	if block == nil || block.Type != sshsigPEM || len(bytes.TrimSpace(rest)) != 0 {
		return ErrSSHSignature
	}
	raw := block.Bytes
	if !bytes.HasPrefix(raw, []byte(sshsigMagic)) {
		return ErrSSHSignature
	}
	var b sshsigBlob
	if err := ssh.Unmarshal(raw[len(sshsigMagic):], &b); err != nil || b.Version != sshsigVersion || b.Namespace != namespace {
		return ErrSSHSignature
	}
	signer, err := ssh.ParsePublicKey(b.PublicKey)
	if err != nil || !bytes.Equal(signer.Marshal(), pub.Marshal()) {
		return ErrSSHSignature
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(b.Signature, &sig); err != nil {
		return ErrSSHSignature
	}
	// PROTOCOL.sshsig: RSA signs with rsa-sha2-256 or -512, never SHA-1.
	if sig.Format == ssh.KeyAlgoRSA {
		return ErrSSHSignature
	}
	signed, err := sshsigSignedData(namespace, b.HashAlgorithm, message)
	if err != nil {
		return err
	}
	if pub.Verify(signed, &sig) != nil {
		return ErrSSHSignature
	}
	return nil
}

// SignSSH signs message in namespace with signer (a key read from a file,
// or one an ssh-agent holds) as `ssh-keygen -Y sign` does (sha512), and
// returns the armoured signature.
func SignSSH(signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	const alg = "sha512"
	signed, err := sshsigSignedData(namespace, alg, message)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if as, ok := signer.(ssh.AlgorithmSigner); ok && signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, signed, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, signed)
	}
	if err != nil {
		return nil, fmt.Errorf("signing: SSH signature: %w", err)
	}
	blob := append([]byte(sshsigMagic), ssh.Marshal(sshsigBlob{Version: sshsigVersion, PublicKey: signer.PublicKey().Marshal(),
		Namespace: namespace, HashAlgorithm: alg, Signature: ssh.Marshal(sig)})...)
	return armourSSH(blob), nil
}

// armourSSH writes blob as ssh-keygen does: PEM-like, 70 columns.
func armourSSH(blob []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(blob)
	var out bytes.Buffer
	out.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return out.Bytes()
}
