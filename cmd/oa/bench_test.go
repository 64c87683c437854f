package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/oa-dev/oa/examples"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds oa and the stock cue CLI (pinned as a tool in go.mod)
// once, so both are measured as the processes a publisher runs.
func binaries(b *testing.B) (oa, cue string) {
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "oa-bench-")
		if binErr != nil {
			return
		}
		for _, target := range [][2]string{{"oa", "."}, {"cue", "cuelang.org/go/cmd/cue"}} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, target[0]), target[1]).CombinedOutput()
			if err != nil {
				binErr = &buildError{target[1], string(out)}
				return
			}
		}
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return filepath.Join(binDir, "oa"), filepath.Join(binDir, "cue")
}

type buildError struct{ target, out string }

func (e *buildError) Error() string { return "building " + e.target + ": " + e.out }

// BenchmarkCLICompile runs `oa compile` and `cue export` of the same bundle
// files side by side in one run; the ratio of their ns/op is reported in
// docs/PERFORMANCE.md.
func BenchmarkCLICompile(b *testing.B) {
	oa, cue := binaries(b)
	for _, name := range examples.Names() {
		dir := filepath.Join(b.TempDir(), name)
		if _, _, code := runCLIb(b, "init", "--example", name, dir); code != 0 {
			b.Fatal("init failed")
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
		out := filepath.Join(b.TempDir(), "ir.json")
		b.Run("oa-compile/"+name, func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(oa, "compile", "-o", out, dir).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cue-export/"+name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(cue, append([]string{"export", "--out", "json"}, files...)...)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func runCLIb(b *testing.B, args ...string) (string, string, int) {
	b.Helper()
	var out, errOut nopWriter
	return "", "", run(args, &out, &errOut)
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }
