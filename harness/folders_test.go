package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestInstallUninstallGivesTheConfigBack: oa harness install then
// uninstall gives a client's file back byte for byte, an empty servers
// container and an empty object included (uninstall used to leave a
// newline inside them).
func TestInstallUninstallGivesTheConfigBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, in := range []string{`{"mcpServers":{}}`, `{}`, `{"mcpServers": {}, "x": 1}`} {
		dir := t.TempDir()
		file := filepath.Join(dir, ".mcp.json")
		if err := os.WriteFile(file, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		m := f.client(t, harness.ClientClaudeCode, dir)
		if _, err := m.Prepare(ctx, "clinic"); err != nil {
			t.Fatal(err)
		}
		r, err := m.Uninstall(ctx, "clinic")
		if err != nil || r.Err() != nil {
			t.Fatalf("uninstall: %v %v", err, r.Err())
		}
		got, err := os.ReadFile(file)
		if err != nil || string(got) != in {
			t.Fatalf("%q came back as %q (%v)", in, got, err)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the file's mode: %v %v", fi, err)
		}
	}
}

// TestLinkedClientFolderIsRefused: a client folder that is a symbolic
// link (.claude pointing elsewhere) is refused as a linked configuration
// file or skill folder is: install writes nothing, through it or beside
// it; and a folder linked after install makes uninstall remove nothing
// and inspect say so.
func TestLinkedClientFolderIsRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, ".claude")); err != nil {
		t.Fatal(err)
	}
	m := f.client(t, harness.ClientClaudeCode, dir)
	if _, err := m.Prepare(ctx, "clinic"); !hosttest.HasCode(t, err, blocking.HarnessInstallDirInvalid) {
		t.Fatalf("install through a linked .claude: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("install wrote through the link: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); !os.IsNotExist(err) {
		t.Fatal("a refused install wrote the server entry")
	}

	dir = t.TempDir()
	m = f.client(t, harness.ClientClaudeCode, dir)
	if _, err := m.Prepare(ctx, "clinic"); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "claude")
	if err := os.Rename(filepath.Join(dir, ".claude"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(dir, ".claude")); err != nil {
		t.Fatal(err)
	}
	before := countFiles(t, moved)
	if _, err := m.Uninstall(ctx, "clinic"); !hosttest.HasCode(t, err, blocking.HarnessInstallDirInvalid) {
		t.Fatalf("uninstall through a linked .claude: %v", err)
	}
	if after := countFiles(t, moved); after != before {
		t.Fatalf("uninstall removed %d files through the link", before-after)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".mcp.json")); len(b) == 0 {
		t.Fatal("a refused uninstall removed the server entry")
	}
	inst, err := m.Inspect(ctx, "clinic")
	if err != nil || failed(inst)[harness.CheckFiles] != blocking.HarnessInstallDirInvalid {
		t.Fatalf("inspect through a linked .claude: %v %v", failed(inst), err)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
