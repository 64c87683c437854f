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

// wantExit stops the test when a command exited with other than want: the
// checks after it read its output, which means little for the wrong exit. The
// message carries both streams, since that is where the reason is.
func wantExit(t testing.TB, what string, code, want int, out, errOut string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", what, code, want, out, errOut)
	}
}

// wantHas stops the test when text lacks any of wants, with one message per
// missing text so a failure names what was expected rather than dumping all.
func wantHas(t testing.TB, what, text string, wants ...string) {
	t.Helper()
	missing := false
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s: want %q in:\n%s", what, want, text)
			missing = true
		}
	}
	if missing {
		t.FailNow()
	}
}

// wantJSON stops the test when text is not the JSON of v: every check after
// it reads v's fields, which a failed decode leaves zero.
func wantJSON(t testing.TB, what, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", what, err, text)
	}
}

// wantLacks stops the test when text holds any of unwanted, one message per
// text found, the mirror of wantHas.
func wantLacks(t testing.TB, what, text string, unwanted ...string) {
	t.Helper()
	found := false
	for _, u := range unwanted {
		if strings.Contains(text, u) {
			t.Errorf("%s: %q should not be in:\n%s", what, u, text)
			found = true
		}
	}
	if found {
		t.FailNow()
	}
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
	wantExit(t, "inspect", code, 0, out, "")
	wantHas(t, "inspect", out, digest, "records.note.append", "consequential")
	out, _, code = runCLI(t, "inspect", "--json", irFile)
	var s struct {
		WorkerIRDigest string `json:"workerIrDigest"`
		Canonical      bool   `json:"canonical"`
	}
	wantExit(t, "inspect --json", code, 0, out, "")
	wantJSON(t, "inspect --json", out, &s)
	if s.WorkerIRDigest != digest {
		t.Errorf("inspect --json workerIrDigest = %q, want %q", s.WorkerIRDigest, digest)
	}
	if !s.Canonical {
		t.Errorf("inspect --json canonical = false, want true: %s", out)
	}
	out, _, code = runCLI(t, "compile", "--json", "-o", filepath.Join(t.TempDir(), "x.json"), dir)
	var c map[string]any
	wantExit(t, "compile --json", code, 0, out, "")
	wantJSON(t, "compile --json", out, &c)
	if c["workerIrDigest"] != digest {
		t.Errorf("compile --json workerIrDigest = %v, want %q", c["workerIrDigest"], digest)
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
	wantHas(t, "refusal location", errOut, "extra.cue:7:", "customer_state_token", "jobs.append_triage_note.inputs.ward.description")
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
	wantExit(t, "--json refusal", code, 2, "", errOut)
	wantJSON(t, "--json refusal", errOut, &j)
	if j.ExitStatus != 2 {
		t.Errorf("--json refusal exitStatus = %d, want 2", j.ExitStatus)
	}
	if len(j.Refusals) != 1 {
		t.Fatalf("--json refusal has %d refusals, want 1: %s", len(j.Refusals), errOut)
	}
	if j.Refusals[0].Code != "customer_state_token" {
		t.Errorf("--json refusal code = %q, want customer_state_token", j.Refusals[0].Code)
	}
	if j.Refusals[0].Fix == "" {
		t.Errorf("--json refusal has no fix: %s", errOut)
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
	wantExit(t, "explain --json", code, 0, out, "")
	wantJSON(t, "explain --json", out, &entries)
	if len(entries) < 20 {
		t.Fatalf("explain --json lists %d codes, want at least 20", len(entries))
	}
	for _, e := range entries {
		if e.Stage == "" {
			t.Errorf("entry %s has no stage", e.Code)
		}
		if e.Title == "" {
			t.Errorf("entry %s has no title", e.Code)
		}
		if e.Copy == "" {
			t.Errorf("entry %s has no copy", e.Code)
		}
		one, _, code := runCLI(t, "explain", e.Code)
		if code != 0 {
			t.Errorf("explain %s: exit code %d, want 0: %s", e.Code, code, one)
		}
		if !strings.Contains(one, e.Copy) {
			t.Errorf("explain %s lacks its copy %q:\n%s", e.Code, e.Copy, one)
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
	wantExit(t, "compile a conflict", code, 2, "", errOut)
	wantHas(t, "compile a conflict", errOut, "bundle_invalid", "extra.cue:3:")
	wantLacks(t, "conflict message echoes a value", errOut, secret[:12], "Append a triage")
}
