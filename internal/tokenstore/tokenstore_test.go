package tokenstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSealedRoundTrip: what Put seals Get returns; the file is 0600 in a
// 0700 folder and holds no plaintext; it does not open under another
// connection's name, edited, readable by others, or after the host's key
// is replaced; Delete removes it.
func TestSealedRoundTrip(t *testing.T) {
	home := t.TempDir()
	s := For(home, "crm")
	if _, err := s.Get(); !errors.Is(err, ErrNone) {
		t.Fatalf("empty store: %v", err)
	}
	plain := []byte(`{"refresh":"rt-planted-secret"}`)
	if err := s.Put(plain); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get()
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("get: %q %v", got, err)
	}
	file := filepath.Join(home, Folder, "crm.token")
	sealed, _ := os.ReadFile(file)
	if bytes.Contains(sealed, []byte("rt-planted-secret")) {
		t.Fatal("the file holds the plaintext")
	}
	for path, want := range map[string]os.FileMode{file: 0o600, filepath.Join(home, Folder): 0o700, filepath.Join(home, Folder, keyFile): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), want, err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, Folder, "other.token"), sealed, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := For(home, "other").Get(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("renamed file: %v", err)
	}
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("group-readable file: %v", err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, Folder, keyFile), bytes.Repeat([]byte{7}, keySize), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another key: %v", err)
	}
	if removed, err := s.Delete(); !removed || err != nil {
		t.Fatalf("delete: %v %v", removed, err)
	}
	if removed, err := s.Delete(); removed || err != nil {
		t.Fatalf("second delete: %v %v", removed, err)
	}
}

// TestLockExcludes: a second Lock waits until the first is released.
func TestLockExcludes(t *testing.T) {
	s := For(t.TempDir(), "crm")
	unlock, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u, err := s.Lock()
		if err == nil {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("the second lock was taken while the first was held")
	default:
	}
	unlock()
	<-got
}

// FuzzGet: any bytes in a token file either open (only what Put sealed)
// or are ErrInvalid; Get never panics.
func FuzzGet(f *testing.F) {
	home := f.TempDir()
	s := For(home, "crm")
	if err := s.Put([]byte("seed")); err != nil {
		f.Fatal(err)
	}
	sealed, _ := os.ReadFile(filepath.Join(home, Folder, "crm.token"))
	f.Add(sealed)
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(home, Folder, "crm.token"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get()
		if err == nil && !bytes.Equal(data, sealed) {
			t.Fatalf("forged bytes opened to %q", got)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("unexpected error: %v", err)
		}
	})
}
