package bind

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/filekey"
	"github.com/oa-dev/oa/schemas"
)

// TestFileDigestsReadAgainOnlyWhatChanged: a file still for longer than
// settle is hashed from memory while stat says the same of it; rewritten
// (even to the same size and times, as an editor keeping its times
// does), renamed over or removed, it is read again; a file changed within
// settle is read on every call.
func TestFileDigestsReadAgainOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.cue")
	old := time.Now().Add(-time.Hour)
	write := func(text string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	var f fileDigests
	want := func(text string) {
		t.Helper()
		got, ok := f.digest(path)
		if !ok || got != sha256.Sum256([]byte(text)) {
			t.Fatalf("digest is not of %q (ok %v)", text, ok)
		}
	}
	write("policy one", old)
	want("policy one")
	if _, kept := f.known[path]; kept {
		t.Fatal("a file whose change time is now was kept: two writes in one tick would be missed")
	}
	// Its change time is now (Chtimes moves it), so it is read each time;
	// once still for settle (here: its times and the known entry aged by
	// hand), the digest comes from memory.
	want("policy one")
	key, _ := filekey.Of(path)
	f.known = map[string]fileSeen{path: {key, sha256.Sum256([]byte("remembered"))}}
	want("remembered")
	// The same size and modification time, other bytes: the change time
	// moved, so it is read again.
	time.Sleep(10 * time.Millisecond)
	write("policy two", old)
	want("policy two")
	// Renamed over: another inode.
	other := filepath.Join(dir, "new.cue")
	if err := os.WriteFile(other, []byte("policy three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	want("policy three")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.digest(path); ok {
		t.Fatal("a removed file was answered from memory")
	}
	// A named pipe in its place is not waited on, and a file over the
	// configuration bound is not read whole: neither is readable.
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.digest(path); ok {
		t.Fatal("a named pipe was read")
	}
	big := filepath.Join(dir, "big.cue")
	if err := os.WriteFile(big, make([]byte, schemas.MaxConfigFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.digest(big); ok {
		t.Fatal("a file over the configuration bound was read")
	}
}
