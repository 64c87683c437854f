package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/internal/atomicfile"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	l, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "state.json" {
		t.Fatalf("folder holds %v", got)
	}
	if err := atomicfile.Write(path, []byte("wide"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v after rewrite", fi.Mode())
	}
}

func TestFailedWriteKeepsOldFileAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.cue")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.WriteFunc(path, 0o644, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the writer's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("old file became %q", b)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("temporary file left behind: %v", got)
	}
}

func TestReplacesALinkNotItsTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "worker.ir.json")
	if err := os.Symlink(target, path); err != nil {
		t.Skip("no symbolic links here")
	}
	if err := atomicfile.Write(path, []byte("ir"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("wrote through the link: %q", b)
	}
	if fi, _ := os.Lstat(path); fi.Mode()&os.ModeSymlink != 0 {
		t.Fatal("the link is still there")
	}
}

func TestMissingFolderFailsAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no", "such", "file")
	if err := atomicfile.Write(path, []byte("x"), 0o644); err == nil {
		t.Fatal("wrote into a missing folder")
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("folder holds %v", got)
	}
}

func TestFailedRenameLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("x"), 0o644); err == nil {
		t.Fatal("replaced a folder that is not empty")
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "busy" {
		t.Fatalf("folder holds %v", got)
	}
}

// TestPrepareThenReplaceOrDiscard: a prepared file is beside the path,
// not in its place, until Replace; Discard leaves the old file; neither
// leaves a temporary file behind.
func TestPrepareThenReplaceOrDiscard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "head")
	if err := atomicfile.Write(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	dropped, err := atomicfile.Prepare(path, []byte("dropped"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := atomicfile.Prepare(path, []byte("new"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" || len(entries(t, dir)) != 3 {
		t.Fatalf("before Replace: %q, folder %v", b, entries(t, dir))
	}
	dropped.Discard()
	if err := kept.Replace(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if b, _ := os.ReadFile(path); err != nil || string(b) != "new" || info.Mode().Perm() != 0o600 {
		t.Fatalf("after Replace: %q, %v", b, err)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("left in the folder: %v", got)
	}
}
