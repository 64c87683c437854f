package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/examples"
)

func BenchmarkCompile(b *testing.B) {
	for _, name := range examples.Names() {
		dir := exampleDir(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mustCompile(b, dir)
			}
		})
	}
}

// BenchmarkCompile500Jobs compiles a generated bundle of 500 jobs, each
// with four steps, sharing four evaluators.
func BenchmarkCompile500Jobs(b *testing.B) {
	dir := generateBundle(b, 500)
	res := mustCompile(b, dir)
	b.ReportMetric(float64(len(res.IR)), "IR-bytes")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		mustCompile(b, dir)
	}
}

func TestGeneratedBundleCompiles(t *testing.T) {
	res := mustCompileChecked(t, generateBundle(t, 50))
	if len(res.Worker.Jobs) != 50 || res.Worker.Jobs[0].Name != "job_000" {
		t.Fatalf("generated bundle compiled to %d jobs", len(res.Worker.Jobs))
	}
}

// generateBundle writes a clinic-style bundle with n jobs.
func generateBundle(tb testing.TB, n int) string {
	tb.Helper()
	dir := exampleDir(tb, examples.Default)
	jobs, err := os.ReadFile(filepath.Join(dir, "jobs.cue"))
	if err != nil {
		tb.Fatal(err)
	}
	body := string(jobs)
	start := strings.Index(body, "jobs: append_triage_note: {")
	end := strings.Index(body, "\nevaluators:")
	job := strings.TrimPrefix(body[start:end], "jobs: append_triage_note: ")
	var b strings.Builder
	b.WriteString("package worker\n\njobs: {\n")
	for i := range n {
		fmt.Fprintf(&b, "job_%03d: %s\n", i, job)
	}
	b.WriteString("}\n")
	b.WriteString(body[end:])
	if err := os.WriteFile(filepath.Join(dir, "jobs.cue"), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}
