package filekey

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKeyMovesWithEveryChange: a rewrite to the same size and times, a
// file renamed into place and a removal each change what Of says; a
// folder has no key; a file just written reads as changed within any
// window longer than its age.
func TestKeyMovesWithEveryChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	old := time.Now().Add(-time.Hour)
	write := func(text string) Key {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		k, ok := Of(path)
		if !ok {
			t.Fatal("no key for a regular file")
		}
		return k
	}
	first := write("one")
	if again, _ := Of(path); again != first {
		t.Fatal("the key of an unchanged file moved")
	}
	if !first.ChangedWithin(time.Minute) {
		t.Fatal("a file whose change time is now reads as still for a minute")
	}
	time.Sleep(10 * time.Millisecond)
	if second := write("two"); second == first {
		t.Fatal("a rewrite to the same size and modification time kept its key")
	}
	other := filepath.Join(dir, "g")
	if err := os.WriteFile(other, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := Of(path)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if after, _ := Of(path); after == before {
		t.Fatal("a file renamed into place kept the key")
	}
	if _, ok := Of(dir); ok {
		t.Fatal("a folder has a key")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := Of(path); ok {
		t.Fatal("a removed file has a key")
	}
}
