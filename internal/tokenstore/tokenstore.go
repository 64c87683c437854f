// Package tokenstore keeps the OAuth tokens of a host's remote connections
// on disk, sealed: each connection's tokens are one file under
// $OA_HOME/oauth, encrypted and authenticated with AES-256-GCM under the
// host's token key ($OA_HOME/oauth/key, 32 random bytes made on first
// use). Every file is mode 0600 in a 0700 folder and is refused
// otherwise; a file edited, renamed to another connection or copied from
// another host does not open. Nothing here is in the host database: a
// token is never stored, planned or signed there.
//
// Writers replace a file atomically (internal/atomicfile); Lock serializes
// the read-refresh-write of one connection across processes, so a rotated
// refresh token is used once.
package tokenstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/oa-dev/oa/internal/atomicfile"
)

// Folder is the folder under $OA_HOME holding the key and token files.
const Folder = "oauth"

const (
	keyFile = "key"
	keySize = 32
	// maxFile bounds a sealed file: tokens are a few KiB at most.
	maxFile = 256 << 10
	// magic starts every sealed file and is bound into its authentication.
	magic = "oa-oauth-token/v1\n"
	// lockWait bounds how long Lock waits for another process.
	lockWait = 30 * time.Second
)

// ErrNone is returned by Get when a connection has no tokens stored.
var ErrNone = errors.New("tokenstore: no tokens stored")

// ErrInvalid is returned for a key or token file that is not a private
// regular file, is too large, or does not open under the host's key.
var ErrInvalid = errors.New("tokenstore: a key or token file is not usable")

// ErrLockTimeout is returned when another process held a connection's lock
// for longer than the wait.
var ErrLockTimeout = errors.New("tokenstore: the token lock was held too long")

// Store is the token store of one connection.
type Store struct {
	dir  string
	name string
}

// For returns the store of connection name on the host at home.
func For(home, name string) *Store {
	return &Store{dir: filepath.Join(home, Folder), name: name}
}

func (s *Store) path() string { return filepath.Join(s.dir, s.name+".token") }

// Get returns the plaintext stored for the connection, ErrNone when there
// is none, or ErrInvalid.
func (s *Store) Get() ([]byte, error) {
	sealed, err := readPrivate(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNone
	}
	if err != nil {
		return nil, err
	}
	key, err := s.key(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrInvalid // a token file with no key to open it
	}
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < len(magic)+aead.NonceSize() || string(sealed[:len(magic)]) != magic {
		return nil, ErrInvalid
	}
	nonce := sealed[len(magic) : len(magic)+aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, sealed[len(magic)+aead.NonceSize():], s.aad())
	if err != nil {
		return nil, ErrInvalid
	}
	return plain, nil
}

// Put seals plain and replaces the connection's file with it, making the
// folder and the host's key when they are missing.
func (s *Store) Put(plain []byte) error {
	if err := s.mkdir(); err != nil {
		return err
	}
	key, err := s.key(true)
	if err != nil {
		return err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	out := append([]byte(magic), nonce...)
	out = aead.Seal(out, nonce, plain, s.aad())
	return atomicfile.Write(s.path(), out, 0o600)
}

// Delete removes the connection's file; it reports whether there was one.
func (s *Store) Delete() (bool, error) {
	err := os.Remove(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Lock takes the connection's lock (a flock on its lock file), waiting at
// most lockWait for another process, and returns the function that
// releases it.
func (s *Store) Lock() (func(), error) {
	if err := s.mkdir(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, s.name+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrLockTimeout
			}
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// aad binds a sealed file to its connection, so a file renamed to another
// connection does not open.
func (s *Store) aad() []byte { return []byte(magic + s.name) }

func (s *Store) mkdir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(s.dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return ErrInvalid
	}
	return nil
}

// key reads the host's token key, making it first when create is set and
// there is none (O_EXCL: of two processes making it, one wins and the
// other reads the winner's).
func (s *Store) key(create bool) ([]byte, error) {
	path := filepath.Join(s.dir, keyFile)
	key, err := readPrivate(path)
	if err == nil {
		if len(key) != keySize {
			return nil, ErrInvalid
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return nil, err
	}
	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return s.key(false)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, ErrInvalid
	}
	return cipher.NewGCM(block)
}

// readPrivate reads a file that must be a regular file of this account,
// readable by no one else, of at most maxFile bytes. A missing file is
// fs.ErrNotExist; anything else wrong is ErrInvalid.
func readPrivate(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, ErrInvalid
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() > maxFile {
		return nil, ErrInvalid
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, ErrInvalid
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil || len(data) > maxFile {
		return nil, ErrInvalid
	}
	return data, nil
}
