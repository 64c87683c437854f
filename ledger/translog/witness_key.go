package translog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/blocking"
)

// WitnessKeyFile and WitnessPublicKeyFile are a witness's key in its
// state folder (`oa witness serve --state DIR`): the Ed25519 key it
// cosigns with, kept as a signed-note signer key (mode 0600), and its
// c2sp.org/tlog-cosignature verifier key, the line a host's policy names
// the witness by.
const (
	WitnessKeyFile       = "witness.key"
	WitnessPublicKeyFile = "witness.pub"
)

// LoadWitnessKey returns the cosignature signer of the witness whose
// state folder is dir, making its key on first use with name (an
// Ed25519 key, mode 0600, created exclusively, so two witnesses racing
// to make it agree on one); the verifier key is written beside it. A key
// file made for another name is refused: a witness never changes name,
// since hosts know it by name and key. name "" takes the key file's name
// (and asks for one when there is no key yet).
func LoadWitnessKey(dir, name string) (*torchwood.CosignatureSigner, error) {
	path := filepath.Join(dir, WitnessKeyFile)
	b, err := readBounded(path, maxKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		if name == "" {
			return nil, blocking.New(blocking.LogKeyInvalid, "the witness has no key yet (%s): name it to make one", WitnessKeyFile)
		}
		if !validName(name) {
			return nil, blocking.New(blocking.LogKeyInvalid, "the witness name %q is not a signed-note name (no spaces, no '+')", cut(name))
		}
		skey, _, gerr := note.GenerateKey(rand.Reader, name)
		if gerr != nil {
			return nil, blocking.New(blocking.LogKeyInvalid, "the witness name %q is not a signed-note name (no spaces, no '+')", cut(name))
		}
		if err = writeNewKey(dir, path, skey); err == nil {
			b, err = readBounded(path, maxKeyFile)
		}
	}
	if err != nil {
		return nil, err
	}
	s, err := cosignerOf(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, err
	}
	if name != "" && s.Name() != name {
		return nil, blocking.New(blocking.LogKeyInvalid, "%s is the key of witness %s, not of %s", WitnessKeyFile, s.Name(), cut(name))
	}
	pub := filepath.Join(dir, WitnessPublicKeyFile)
	if _, err := os.Stat(pub); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(pub, []byte(s.Verifier().String()+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// cosignerOf is the c2sp.org/tlog-cosignature/v1 signer of an encoded
// signed-note Ed25519 signer key: the same name and seed.
func cosignerOf(skey string) (*torchwood.CosignatureSigner, error) {
	bad := blocking.New(blocking.LogKeyInvalid, "%s is not a signed-note Ed25519 signer key", WitnessKeyFile)
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, bad
	}
	seed, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(seed) != 1+ed25519.SeedSize || seed[0] != 1 {
		return nil, bad
	}
	s, err := torchwood.NewCosignatureSigner(parts[2], ed25519.NewKeyFromSeed(seed[1:]))
	if err != nil {
		return nil, bad
	}
	return s, nil
}

// writeNewKey writes skey to path (mode 0600, in a 0700 folder) unless a
// file is there already: a link, not a rename, so that of two processes
// making a key at once the first one's is kept and the other reads it.
func writeNewKey(dir, path, skey string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(skey + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
