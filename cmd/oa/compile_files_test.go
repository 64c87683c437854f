package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oa-dev/oa/compiler"
)

// TestCompileRefusesBundleFiles: through the CLI, a skill doc linked to a
// file outside the bundle, to /dev/zero, a named pipe and an oversize
// file each give exit status 2 with the located code, and nothing is
// written.
func TestCompileRefusesBundleFiles(t *testing.T) {
	const marker = "Outside words that must never be compiled."
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("# Outside\n\n"+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, code string
		plant            func(p string) error
	}{
		{"link_outside", "skills/triage.md", "bundle_link_escapes", func(p string) error { return os.Symlink(outside, p) }},
		{"link_dev_zero", "skills/zero.md", "bundle_link_escapes", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"cue_link_outside", "extra.cue", "bundle_link_escapes", func(p string) error { return os.Symlink(outside, p) }},
		{"fifo", "skills/pipe.md", "bundle_file_not_regular", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"oversize", "skills/big.md", "bundle_file_too_large", func(p string) error {
			return os.WriteFile(p, []byte("# Big\n\n"+strings.Repeat("x", compiler.MaxBundleFileBytes)), 0o644)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bundle")
			if _, errOut, code := runCLI(t, "init", dir); code != 0 {
				t.Fatalf("init: %d %s", code, errOut)
			}
			p := filepath.Join(dir, tc.file)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := tc.plant(p); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, "compile", dir)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s%s", code, out, errOut)
			}
			wantHas(t, "refusal does not name the file, the code and a fix", errOut, p+": ", "["+tc.code+"]", "fix: ")
			if strings.Contains(out+errOut, marker) {
				t.Fatalf("output carries outside text:\n%s%s", out, errOut)
			}
			if _, err := os.Lstat(filepath.Join(dir, "worker.ir.json")); !os.IsNotExist(err) {
				t.Fatalf("a refused compile wrote worker.ir.json: %v", err)
			}
		})
	}
}

// TestCompileReplacesLinkedOutput: a worker.ir.json link planted in the
// bundle folder is replaced by the IR, never written through.
func TestCompileReplacesLinkedOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, errOut, code := runCLI(t, "init", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	irFile := filepath.Join(dir, "worker.ir.json")
	if err := os.Symlink(victim, irFile); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "compile", dir); code != 0 {
		t.Fatalf("compile: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine" {
		t.Fatal("compile wrote through a link at its output")
	}
	info, err := os.Lstat(irFile)
	if err != nil {
		t.Fatalf("worker.ir.json: %v", err)
	}
	if !info.Mode().IsRegular() {
		t.Fatalf("worker.ir.json is not a regular file: %v", info.Mode())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".worker.ir.json") {
			t.Fatalf("staging file %s left behind", e.Name())
		}
	}
}
