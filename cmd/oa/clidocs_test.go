package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// updateCLIReference rewrites docs/cli and docs/man from the command tree:
// go test ./cmd/oa -run TestCLIReference -update
var updateCLIReference = flag.Bool("update", false, "rewrite the generated CLI reference (docs/cli) and man pages (docs/man)")

// The generated reference lives beside the hand-written docs, two folders
// up from this package.
var (
	cliReferenceDir = filepath.Join("..", "..", "docs", "cli")
	manPagesDir     = filepath.Join("..", "..", "docs", "man")
)

// manPageDate is the date every man page's header carries: a fixed one, so
// regenerating an unchanged command tree changes no byte (cobra would
// otherwise write today's month).
var manPageDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// TestCLIReference fails when the committed CLI reference or man pages are
// not what the command tree generates today: a flag, a command or a help
// text changed without regenerating them.
func TestCLIReference(t *testing.T) {
	markdown, man := t.TempDir(), t.TempDir()
	generateCLIReference(t, markdown, man)
	if *updateCLIReference {
		replaceDir(t, markdown, cliReferenceDir)
		replaceDir(t, man, manPagesDir)
		return
	}
	for _, d := range []struct{ generated, committed string }{{markdown, cliReferenceDir}, {man, manPagesDir}} {
		if stale := staleFiles(t, d.generated, d.committed); len(stale) > 0 {
			t.Errorf("%s is stale (%s); regenerate it with: go test ./cmd/oa -run TestCLIReference -update", d.committed, firstOf(stale, 5))
		}
	}
}

// TestCLIReferenceReproducible generates the reference twice, under two
// different homes, and wants the same bytes: nothing of the machine, the
// user or the day may reach the committed files.
func TestCLIReferenceReproducible(t *testing.T) {
	firstMD, firstMan := t.TempDir(), t.TempDir()
	generateCLIReference(t, firstMD, firstMan)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("OA_HOME", t.TempDir())
	secondMD, secondMan := t.TempDir(), t.TempDir()
	generateCLIReference(t, secondMD, secondMan)
	if stale := staleFiles(t, firstMD, secondMD); len(stale) > 0 {
		t.Errorf("the markdown reference depends on the machine: %v", stale)
	}
	if stale := staleFiles(t, firstMan, secondMan); len(stale) > 0 {
		t.Errorf("the man pages depend on the machine: %v", stale)
	}
}

// generateCLIReference writes one markdown page and one man page (section
// 1) per command of the real root, as oa --help shows it (help and
// completion commands included).
func generateCLIReference(t *testing.T, markdownDir, manDir string) {
	t.Helper()
	root := cliReferenceRoot()
	if err := doc.GenMarkdownTree(root, markdownDir); err != nil {
		t.Fatal(err)
	}
	header := &doc.GenManHeader{Section: "1", Source: "oa", Manual: "oa manual", Date: &manPageDate}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		t.Fatal(err)
	}
}

// cliReferenceRoot is the root command as oa runs it, with the help and
// completion commands cobra adds only when it executes, and without
// cobra's "Auto generated … on DATE" footer.
func cliReferenceRoot() *cobra.Command {
	root := newRoot(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	disableAutoGenTag(root)
	return root
}

func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}

// staleFiles names the files that differ between the two folders: changed,
// missing from committed, or left over in it.
func staleFiles(t *testing.T, generated, committed string) []string {
	t.Helper()
	want, have := readDir(t, generated), readDir(t, committed)
	var stale []string
	for name, body := range want {
		if got, ok := have[name]; !ok {
			stale = append(stale, name+" missing")
		} else if !bytes.Equal(got, body) {
			stale = append(stale, name+" changed")
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			stale = append(stale, name+" left over")
		}
	}
	slices.Sort(stale)
	return stale
}

// firstOf lists the first n names, and how many more there are.
func firstOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// readDir reads every file of dir by name; a missing dir reads as empty.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = body
	}
	return files
}

// replaceDir makes dst hold exactly the files of src, so a command removed
// from the tree loses its page.
func replaceDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range readDir(t, src) {
		if err := os.WriteFile(filepath.Join(dst, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
