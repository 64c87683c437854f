package main

import (
	"strings"
	"testing"
)

// TestDebugPrintsTheCause: a registry that cannot be reached is refused
// naming the host only; with --debug the transport's own text (what was
// dialled, "connection refused") follows on stderr as "oa: debug:" lines,
// or in the --json refusal's debug list, and nothing is printed on stdout.
// On main --debug was an unknown flag and the transport's text was lost.
func TestDebugPrintsTheCause(t *testing.T) {
	t.Setenv("OA_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	ref := "127.0.0.1:1/oa/x@sha256:" + strings.Repeat("a", 64)
	_, plain, code := runCLI(t, "pull", ref)
	wantExit(t, "pull without --debug", code, 2, plain, "")
	wantHas(t, "pull without --debug", plain, "registry_unreachable")
	wantLacks(t, "pull without --debug", plain, "connection refused", "debug")
	out, errOut, code := runCLI(t, "pull", "--debug", ref)
	wantExit(t, "pull --debug", code, 2, out, errOut)
	if out != "" {
		t.Fatalf("pull --debug: stdout %q, want none", out)
	}
	if !strings.HasPrefix(errOut, plain) {
		t.Fatalf("pull --debug: stderr does not begin with the plain refusal %q:\n%s", plain, errOut)
	}
	wantHas(t, "pull --debug", errOut, "\noa: debug: registry_unreachable: cause: ", "connection refused")
	_, errOut, code = runCLI(t, "--json", "--debug", "pull", ref)
	var j struct {
		ExitStatus int      `json:"exitStatus"`
		Debug      []string `json:"debug"`
	}
	wantExit(t, "--json --debug", code, 2, "", errOut)
	wantJSON(t, "--json --debug", errOut, &j)
	if j.ExitStatus != 2 {
		t.Fatalf("--json --debug: exitStatus = %d, want 2", j.ExitStatus)
	}
	if len(j.Debug) != 1 {
		t.Fatalf("--json --debug: %d debug lines, want 1: %q", len(j.Debug), j.Debug)
	}
	wantHas(t, "--json --debug: the debug line", j.Debug[0], "connection refused")
}
