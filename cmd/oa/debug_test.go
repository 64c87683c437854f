package main

import (
	"encoding/json"
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
	if code != 2 || !strings.Contains(plain, "registry_unreachable") || strings.Contains(plain, "connection refused") || strings.Contains(plain, "debug") {
		t.Fatalf("pull without --debug: exit %d\n%s", code, plain)
	}
	out, errOut, code := runCLI(t, "pull", "--debug", ref)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, plain) || !strings.Contains(errOut, "\noa: debug: registry_unreachable: cause: ") || !strings.Contains(errOut, "connection refused") {
		t.Fatalf("pull --debug: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "--json", "--debug", "pull", ref)
	var j struct {
		ExitStatus int      `json:"exitStatus"`
		Debug      []string `json:"debug"`
	}
	if code != 2 || json.Unmarshal([]byte(errOut), &j) != nil || j.ExitStatus != 2 || len(j.Debug) != 1 || !strings.Contains(j.Debug[0], "connection refused") {
		t.Fatalf("--json --debug: exit %d\n%s", code, errOut)
	}
}
