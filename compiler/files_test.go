package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// symlink makes file (relative to the bundle) a symbolic link to target,
// replacing what is there. A target of the form "BUNDLE/x" is made
// relative to nothing: it is the absolute path of x in the bundle.
func symlink(file, target string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, file)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// fifo makes file (relative to the bundle) a named pipe nobody writes to:
// a compile that opened it for a blocking read would never return.
func fifo(file string) bundleEdit {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, file)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// outsideFile writes a file outside any bundle holding text and returns
// its path.
func outsideFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "outside.md")
	writeTestFile(t, p, text)
	return p
}

// outsideMarker is text that must never reach the IR or a refusal.
const outsideMarker = "Outside text that must never be compiled."

type bundleFileCase struct {
	name  string
	edits func(t *testing.T) []bundleEdit
	want  wantRefusal
}

func bundleFileCases() []bundleFileCase {
	big := strings.Repeat("x", MaxBundleFileBytes)
	return []bundleFileCase{
		{"skill_link_outside", func(t *testing.T) []bundleEdit {
			return []bundleEdit{symlink("skills/triage.md", outsideFile(t, "# Outside\n\n"+outsideMarker+"\n"))}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "skills/triage.md"}},
		{"skill_link_relative_outside", func(t *testing.T) []bundleEdit {
			return []bundleEdit{putFile("../outside.md", "# Outside\n\n"+outsideMarker+"\n"), symlink("skills/triage.md", "../../outside.md")}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "skills/triage.md"}},
		{"skills_folder_link_outside", func(t *testing.T) []bundleEdit {
			return []bundleEdit{symlink("skills", filepath.Dir(outsideFile(t, "# Outside\n\n"+outsideMarker+"\n")))}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "skills"}},
		{"cue_link_outside", func(t *testing.T) []bundleEdit {
			p := filepath.Join(t.TempDir(), "extra.cue")
			writeTestFile(t, p, "package worker\n\npersona: \""+outsideMarker+"\"\n")
			return []bundleEdit{symlink("extra.cue", p)}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "extra.cue"}},
		{"skill_link_dev_zero", func(t *testing.T) []bundleEdit {
			return []bundleEdit{symlink("skills/zero.md", "/dev/zero")}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "skills/zero.md"}},
		{"cue_link_dev_zero", func(t *testing.T) []bundleEdit {
			return []bundleEdit{symlink("zero.cue", "/dev/zero")}
		}, wantRefusal{code: blocking.BundleLinkEscapes, file: "zero.cue"}},
		{"skill_fifo", func(t *testing.T) []bundleEdit {
			return []bundleEdit{fifo("skills/pipe.md")}
		}, wantRefusal{code: blocking.BundleFileNotRegular, file: "skills/pipe.md"}},
		{"cue_fifo", func(t *testing.T) []bundleEdit {
			return []bundleEdit{fifo("pipe.cue")}
		}, wantRefusal{code: blocking.BundleFileNotRegular, file: "pipe.cue"}},
		{"skill_link_to_fifo_inside", func(t *testing.T) []bundleEdit {
			return []bundleEdit{fifo("pipe"), symlink("skills/pipe.md", "../pipe")}
		}, wantRefusal{code: blocking.BundleFileNotRegular, file: "skills/pipe.md"}},
		{"cue_folder", func(t *testing.T) []bundleEdit {
			return []bundleEdit{putFile("odd.cue/inner.txt", "x")}
		}, wantRefusal{code: blocking.BundleFileNotRegular, file: "odd.cue"}},
		{"skill_link_to_nothing", func(t *testing.T) []bundleEdit {
			return []bundleEdit{symlink("skills/gone.md", "missing.md")}
		}, wantRefusal{code: blocking.BundleFileNotRegular, file: "skills/gone.md"}},
		{"skill_oversize", func(t *testing.T) []bundleEdit {
			return []bundleEdit{putFile("skills/big.md", "# Big\n\n"+big)}
		}, wantRefusal{code: blocking.BundleFileTooLarge, file: "skills/big.md"}},
		{"cue_oversize", func(t *testing.T) []bundleEdit {
			return []bundleEdit{putFile("big.cue", "package worker\n\n// "+big+"\n")}
		}, wantRefusal{code: blocking.BundleFileTooLarge, file: "big.cue"}},
		{"bundle_total_oversize", func(t *testing.T) []bundleEdit {
			var edits []bundleEdit
			part := "# Part\n\n" + strings.Repeat("word ", (MaxBundleFileBytes-16)/5) + "\n"
			for i := range MaxBundleBytes/len(part) + 1 {
				edits = append(edits, putFile(fmt.Sprintf("skills/part-%d.md", i), part))
			}
			return edits
		}, wantRefusal{code: blocking.BundleTooLarge}},
		{"too_many_files", func(t *testing.T) []bundleEdit {
			var edits []bundleEdit
			for i := range MaxBundleFiles {
				edits = append(edits, putFile(fmt.Sprintf("skills/n%04d.md", i), "# A skill\n\nIt reads well.\n"))
			}
			return edits
		}, wantRefusal{code: blocking.BundleTooLarge, file: "."}},
	}
}

// TestBundleFilesRefused plants links, pipes and oversize files in a copy
// of clinic-triage: each compile returns (a pipe is never waited on), is
// refused with the located code, and no outside text reaches the refusal.
func TestBundleFilesRefused(t *testing.T) {
	for _, tc := range bundleFileCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedExample(t, tc.edits(t)...)
			res, err := Compile(dir)
			if res != nil || blocking.ExitStatus(err) != 2 {
				t.Fatalf("Compile = %v, %v; want a refusal", res, err)
			}
			refused := blocking.Refusals(err)
			checkWant(t, dir, refused, tc.want)
			same := 0
			for _, e := range refused {
				if e.Code == tc.want.code {
					same++
				}
			}
			if same != 1 {
				t.Errorf("%d %s refusals, want 1: %v", same, tc.want.code, err)
			}
			if strings.Contains(err.Error(), outsideMarker) {
				t.Fatalf("refusal carries outside text:\n%v", err)
			}
			for _, e := range refused {
				if entry, ok := blocking.Lookup(e.Code); !ok || entry.Stage != blocking.StageCompile {
					t.Errorf("code %s is not a compile-stage code", e.Code)
				}
			}
		})
	}
}

// TestBundleLinkInsideFollowed: a link that stays in the bundle and names
// a regular file is followed, and compiles to the same IR as the file
// itself would.
func TestBundleLinkInsideFollowed(t *testing.T) {
	plain := editedExample(t)
	want, err := Compile(plain)
	if err != nil {
		t.Fatal(err)
	}
	linked := editedExample(t, func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "shared"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "skills", "triage.md"), filepath.Join(dir, "shared", "triage.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "jobs.cue"), filepath.Join(dir, "shared", "jobs.cue.txt")); err != nil {
			t.Fatal(err)
		}
	}, symlink("skills/triage.md", "../shared/triage.md"), symlink("jobs.cue", filepath.Join("shared", "jobs.cue.txt")))
	got, err := Compile(linked)
	if err != nil {
		t.Fatalf("Compile with inside links: %v", err)
	}
	if got.Digest != want.Digest {
		t.Fatalf("digest %s through links, %s without", got.Digest, want.Digest)
	}
}

// TestBundleFolderItselfMayBeLink: the folder named on the command line
// may itself be a link; only what is inside it is held to the folder.
func TestBundleFolderItselfMayBeLink(t *testing.T) {
	dir := editedExample(t)
	link := filepath.Join(t.TempDir(), "bundle-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(link); err != nil {
		t.Fatalf("Compile through a linked folder: %v", err)
	}
}
