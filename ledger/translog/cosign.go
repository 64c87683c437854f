package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// algCosignatureV1 is c2sp.org/tlog-cosignature's signed-note algorithm.
const algCosignatureV1 = 4

// cosignatureVerifier verifies a c2sp.org/tlog-cosignature/v1 signature
// (a witness's timestamped cosignature of a checkpoint) with a witness's
// public key. torchwood v0.6.1 verifies these only from the signer side
// (CosignatureSigner.Verifier), so a verifier made from a vkey is here;
// TestCosignatureVerifierReadsTorchwood holds it to torchwood's signer.
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }

// Verify checks sig (8-byte big-endian time || Ed25519 signature) over
// "cosignature/v1\ntime T\n" and the checkpoint msg, which must be a
// checkpoint as torchwood formats it.
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	c, err := torchwood.ParseCheckpoint(string(msg))
	if err != nil || c.String() != string(msg) {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	m := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", t, msg)
	return ed25519.Verify(v.key, m, sig[8:])
}

// newCosignatureVerifier parses a witness vkey, NAME+HASH+BASE64(4 || key).
func newCosignatureVerifier(vkey string) (note.Verifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 || len(parts[1]) != 8 || !validName(parts[0]) {
		return nil, errors.New("malformed cosignature key")
	}
	hash, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return nil, errors.New("malformed cosignature key")
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, errors.New("malformed cosignature key")
	}
	if uint32(hash) != keyHash(parts[0], key) {
		return nil, errors.New("cosignature key hash mismatch")
	}
	return &cosignatureVerifier{name: parts[0], hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

// keyHash is signed-note's key hash: the first four bytes of
// SHA-256(name || "\n" || alg || key).
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// validName is signed-note's rule for a key name: non-empty, no spaces,
// no '+'.
func validName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "+ \t\n\r") && strings.ToValidUTF8(name, "") == name
}
