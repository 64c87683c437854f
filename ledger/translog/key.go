package translog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/boundedfile"
)

// KeyFile and PublicKeyFile are the host's log key under $OA_HOME: the
// signed-note Ed25519 signer key (mode 0600) and its verifier key, the
// line an auditor is given.
const (
	KeyFile       = "keys/log.key"
	PublicKeyFile = "keys/log.pub"
)

// maxKeyFile bounds a key file read: a signed-note key is ~130 bytes.
const maxKeyFile = 4 << 10

// Origin is the log origin of a host: "oa/" + its name. Host names are
// lowercase DNS labels (schemas/host), so the origin is always a valid
// signed-note name.
func Origin(host string) string { return "oa/" + host }

// Key is a host's log key: it signs the log's checkpoints.
type Key struct {
	signer   note.Signer
	verifier note.Verifier
	vkey     string
}

// Origin is the log the key signs for (the key's name).
func (k *Key) Origin() string { return k.signer.Name() }

// Verifier is the key's signed-note verifier.
func (k *Key) Verifier() note.Verifier { return k.verifier }

// VerifierKey is the key's public verifier key, NAME+HASH+BASE64.
func (k *Key) VerifierKey() string { return k.vkey }

// NewKey makes a key of an encoded signed-note signer key (as
// note.GenerateKey writes it).
func NewKey(skey string) (*Key, error) {
	s, err := note.NewSigner(strings.TrimSpace(skey))
	if err != nil {
		return nil, blocking.New(blocking.LogKeyInvalid, "the log key is not a signed-note Ed25519 signer key")
	}
	v, err := torchwood.NewVerifierFromSigner(strings.TrimSpace(skey))
	if err != nil {
		return nil, blocking.New(blocking.LogKeyInvalid, "the log key is not a signed-note Ed25519 signer key")
	}
	vkey, err := verifierKeyOf(strings.TrimSpace(skey))
	if err != nil {
		return nil, err
	}
	return &Key{signer: s, verifier: v, vkey: vkey}, nil
}

// verifierKeyOf is the verifier key of an encoded signer key
// (PRIVATE+KEY+NAME+HASH+BASE64(1 || seed)): the same name with the
// seed's public key.
func verifierKeyOf(skey string) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	bad := blocking.New(blocking.LogKeyInvalid, "the log key is not a signed-note Ed25519 signer key")
	if len(parts) != 5 {
		return "", bad
	}
	b, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(b) != 1+ed25519.SeedSize || b[0] != 1 {
		return "", bad
	}
	vkey, err := note.NewEd25519VerifierKey(parts[2], ed25519.NewKeyFromSeed(b[1:]).Public().(ed25519.PublicKey))
	if err != nil {
		return "", bad
	}
	return vkey, nil
}

// keys caches each home's log key by the file's path: a seal loads it
// once per process.
var keys sync.Map // path → *Key

// LoadKey returns home's log key for origin, making it on first use
// (note.GenerateKey: Ed25519, mode 0600 in a 0700 folder, created
// exclusively, so processes racing to make it agree on one). A key file
// that names another origin (the host was renamed) is refused: a log
// never changes origin.
func LoadKey(home, origin string) (*Key, error) {
	path := filepath.Join(home, KeyFile)
	if k, ok := keys.Load(path); ok && k.(*Key).Origin() == origin {
		return k.(*Key), nil
	}
	k, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err = makeKey(home, origin)
	}
	if err != nil {
		return nil, err
	}
	if k.Origin() != origin {
		return nil, blocking.New(blocking.LogKeyInvalid, "%s is the key of log %s, not of %s", KeyFile, k.Origin(), origin)
	}
	keys.Store(path, k)
	return k, nil
}

func readKey(path string) (*Key, error) {
	b, err := readBounded(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	return NewKey(string(b))
}

// readBounded reads a file of at most max bytes; a larger one is refused.
func readBounded(path string, max int64) ([]byte, error) {
	b, err := boundedfile.Read(path, max)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return nil, blocking.New(blocking.LogKeyInvalid, "%s is larger than a key can be (%d bytes)", filepath.Base(path), max)
	}
	return b, err
}

func makeKey(home, origin string) (*Key, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, blocking.New(blocking.LogKeyInvalid, "the log origin %q is not a signed-note name", origin)
	}
	dir := filepath.Join(home, filepath.Dir(KeyFile))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(home, KeyFile)
	tmp, err := os.CreateTemp(dir, ".log.key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(skey + "\n"); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// A link, not a rename: it fails when another process made the key
	// first, and then that key is the host's.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path)
		}
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, PublicKeyFile), []byte(vkey+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	return NewKey(skey)
}

// ReadVerifierKey reads a verifier key given as its text
// (NAME+HASH+BASE64) or as a file holding it (read bounded).
func ReadVerifierKey(s string) (note.Verifier, error) {
	if v, err := ParseVerifierKey(strings.TrimSpace(s)); err == nil {
		return v, nil
	}
	b, err := readBounded(s, maxKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, blocking.New(blocking.LogKeyInvalid, "the key %q is neither a verifier key nor a file", cut(s))
	}
	if err != nil {
		return nil, err
	}
	return ParseVerifierKey(strings.TrimSpace(string(b)))
}

// ParseVerifierKey parses a signed-note verifier key: an Ed25519 log key
// (algorithm 1) or a c2sp.org/tlog-cosignature witness key (algorithm 4).
func ParseVerifierKey(vkey string) (note.Verifier, error) {
	if v, err := note.NewVerifier(vkey); err == nil {
		return v, nil
	}
	if v, err := newCosignatureVerifier(vkey); err == nil {
		return v, nil
	}
	return nil, blocking.New(blocking.LogKeyInvalid, "%q is not a signed-note Ed25519 or cosignature verifier key", cut(vkey))
}

// cut shortens text quoted in a refusal.
func cut(s string) string {
	if len(s) > 96 {
		return s[:96] + "…"
	}
	return s
}
