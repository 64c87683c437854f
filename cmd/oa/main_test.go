package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestInitCompileInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, errOut, code := runCLI(t, "init", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "compile", dir)
	if code != 0 {
		t.Fatalf("compile: %d %s", code, errOut)
	}
	digest := strings.TrimSpace(out)
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
		t.Fatalf("compile printed %q, want a digest", out)
	}
	irFile := filepath.Join(dir, "worker.ir.json")
	out, _, code = runCLI(t, "inspect", irFile)
	if code != 0 || !strings.Contains(out, digest) || !strings.Contains(out, "records.note.append") || !strings.Contains(out, "consequential") {
		t.Fatalf("inspect: %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "inspect", "--json", irFile)
	var s struct {
		WorkerIRDigest string `json:"workerIrDigest"`
		Canonical      bool   `json:"canonical"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.WorkerIRDigest != digest || !s.Canonical {
		t.Fatalf("inspect --json: %d %s", code, out)
	}
	out, _, code = runCLI(t, "compile", "--json", "-o", filepath.Join(t.TempDir(), "x.json"), dir)
	var c map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || c["workerIrDigest"] != digest {
		t.Fatalf("compile --json: %d %s", code, out)
	}
}

func TestRefusalExitsTwoAndWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	runCLI(t, "init", dir)
	secret := "ghp_" + strings.Repeat("Zx9", 12)
	if err := os.WriteFile(filepath.Join(dir, "extra.cue"), []byte("package worker\n\nresponsibility: _\npersona: _\njobs: append_triage_note: inputs: ward: {\n\ttype: \"string\"\n\tdescription: \"Use key "+secret+" here.\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ir.json")
	_, errOut, code := runCLI(t, "compile", "-o", out, dir)
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errOut)
	}
	if !strings.Contains(errOut, "extra.cue:7:") || !strings.Contains(errOut, "customer_state_token") || !strings.Contains(errOut, "jobs.append_triage_note.inputs.ward.description") {
		t.Fatalf("refusal not located:\n%s", errOut)
	}
	if strings.Contains(errOut, secret[:10]) {
		t.Fatalf("refusal echoes the secret:\n%s", errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a refused compile wrote output")
	}
	_, errOut, code = runCLI(t, "compile", "--json", "-o", out, dir)
	var j struct {
		ExitStatus int `json:"exitStatus"`
		Refusals   []struct {
			Code, Pos, Path, Stage, Fix string
		} `json:"refusals"`
	}
	if code != 2 || json.Unmarshal([]byte(errOut), &j) != nil || j.ExitStatus != 2 || len(j.Refusals) != 1 || j.Refusals[0].Code != "customer_state_token" || j.Refusals[0].Fix == "" {
		t.Fatalf("--json refusal: %d %s", code, errOut)
	}
}

func TestExitStatuses(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"compile"}, 2},
		{[]string{"compile", "--nope", "x"}, 2},
		{[]string{"compile", filepath.Join(t.TempDir(), "missing")}, 2},
		{[]string{"explain", "no_such_code"}, 2},
		{[]string{"explain", "bundle_schema_violation"}, 0},
		{[]string{"version"}, 0},
	}
	for _, c := range cases {
		if _, errOut, code := runCLI(t, c.args...); code != c.want {
			t.Errorf("oa %v: exit %d, want %d (%s)", c.args, code, c.want, errOut)
		}
	}
	for _, args := range [][]string{{"inspect", filepath.Join(t.TempDir(), "missing.json")}, {"push", filepath.Join(t.TempDir(), "missing"), "x:1"}} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("oa %v of a missing file: exit %d, want 2 (a refusal naming the input)", args, code)
		}
	}
}

func TestExplainEveryCode(t *testing.T) {
	out, _, code := runCLI(t, "explain", "--json")
	var entries []struct{ Code, Stage, Title, Copy string }
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil || len(entries) < 20 {
		t.Fatalf("explain --json: %d %s", code, out)
	}
	for _, e := range entries {
		if e.Stage == "" || e.Title == "" || e.Copy == "" {
			t.Errorf("entry %s is incomplete", e.Code)
		}
		one, _, code := runCLI(t, "explain", e.Code)
		if code != 0 || !strings.Contains(one, e.Copy) {
			t.Errorf("explain %s: %d %s", e.Code, code, one)
		}
	}
}

// TestConflictingValueIsNotEchoed: CUE quotes both sides of a conflict; a
// secret written over another value must still not reach the output.
func TestConflictingValueIsNotEchoed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	runCLI(t, "init", dir)
	secret := "sk_live_" + strings.Repeat("Q7w", 8)
	if err := os.WriteFile(filepath.Join(dir, "extra.cue"), []byte("package worker\n\njobs: append_triage_note: purpose: \""+secret+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "compile", dir)
	if code != 2 || !strings.Contains(errOut, "bundle_invalid") || !strings.Contains(errOut, "extra.cue:3:") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if strings.Contains(errOut, secret[:12]) || strings.Contains(errOut, "Append a triage") {
		t.Fatalf("conflict message echoes a value:\n%s", errOut)
	}
}
