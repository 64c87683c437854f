package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCompileBudget (issue 22, D8): a kilobyte bundle that doubles a
// string, a 9-million-element comprehension and a bundle generating
// thousands of jobs each end in a named refusal, exit 2, with nothing
// written — not an out-of-memory crash, minutes of CPU or a compile that
// never ends.
func TestCompileBudget(t *testing.T) {
	doubling := "package worker\nd0: \"abcdefgh\"\n"
	for i := 1; i <= 40; i++ {
		doubling += fmt.Sprintf("d%d: d%d + d%d\n", i, i-1, i-1)
	}
	cases := []struct {
		name, file, code string
		flags            []string
	}{
		{"doubling", doubling, "compile_memory_exceeded", []string{"--max-memory-bytes", "134217728"}},
		{"comprehension", "package worker\nimport \"list\"\nn: len([for a in list.Range(0,3000,1) for b in list.Range(0,3000,1) {a}])\n", "compile_time_exceeded", []string{"--timeout", "2s"}},
		{"many_jobs", "package worker\nimport \"list\"\njobs: {for i in list.Range(0,2000,1) {\"j\\(i)\": {purpose: \"x\"}}}\n", "bundle_too_many_entries", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bundle")
			if _, errOut, code := runCLI(t, "init", dir); code != 0 {
				t.Fatalf("init: %d %s", code, errOut)
			}
			if err := os.WriteFile(filepath.Join(dir, "costly.cue"), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, append([]string{"compile", dir}, tc.flags...)...)
			wantExit(t, "compile", code, 2, out, errOut)
			wantHas(t, "compile", errOut, "["+tc.code+"]", "fix: ")
			if _, err := os.Lstat(filepath.Join(dir, "worker.ir.json")); !os.IsNotExist(err) {
				t.Fatalf("a refused compile wrote worker.ir.json: %v", err)
			}
		})
	}
}

// TestPublishRefusesIRHostsRefuse (issue 22, D15): IR over what hosts
// accept by default (limits.ir_bytes) is refused by compile and push
// before anything is written, unless --max-ir-bytes says the hosts raised
// it. The limit is lowered here to the example's size minus one, which
// refuses it the way a 5.9 MB IR is refused under the 4 MiB default.
func TestPublishRefusesIRHostsRefuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, errOut, code := runCLI(t, "init", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	irFile := filepath.Join(t.TempDir(), "worker.ir.json")
	if _, errOut, code := runCLI(t, "compile", dir, "-o", irFile); code != 0 {
		t.Fatalf("compile: %d %s", code, errOut)
	}
	ir, err := os.ReadFile(irFile)
	if err != nil {
		t.Fatal(err)
	}
	under := fmt.Sprint(len(ir) - 1)
	out := filepath.Join(t.TempDir(), "again.ir.json")
	_, errOut, code := runCLI(t, "compile", dir, "-o", out, "--max-ir-bytes", under)
	wantExit(t, "compile over --max-ir-bytes", code, 2, "", errOut)
	wantHas(t, "compile over --max-ir-bytes", errOut, "[ir_too_large_for_hosts]")
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused compile wrote its IR: %v", err)
	}
	t.Setenv("OA_HOME", t.TempDir())
	for _, src := range []string{dir, irFile} {
		_, errOut, code := runCLI(t, "push", src, "clinic:test", "--max-ir-bytes", under)
		what := "push " + src + " over --max-ir-bytes"
		wantExit(t, what, code, 2, "", errOut)
		wantHas(t, what, errOut, "[ir_too_large_for_hosts]")
	}
	if _, err := os.Lstat(filepath.Join(os.Getenv("OA_HOME"), "oci")); !os.IsNotExist(err) {
		t.Fatalf("a refused push wrote a layout: %v", err)
	}
	if _, errOut, code := runCLI(t, "push", irFile, "clinic:test", "--max-ir-bytes", fmt.Sprint(len(ir))); code != 0 {
		t.Fatalf("push at the limit: exit %d\n%s", code, errOut)
	}
}
