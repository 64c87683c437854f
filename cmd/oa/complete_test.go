package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/host"
)

// completions runs cobra's completion request and returns the names
// offered (flags left out) and the directive line.
func completions(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var names []string
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "-") { // cobra offers required flags too
			names = append(names, l)
		}
	}
	return names, lines[len(lines)-1]
}

// TestCompletionKnowsTheHost: shell completion offers the host's bound
// deployments (--deployment, oa bind inspect), connections (oa connection
// show|verify|…) and the clients of --client, and files for none of them
// (on main it knew commands and flags only).
func TestCompletionKnowsTheHost(t *testing.T) {
	boundHost(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"harness", "install", "--client", "claude-code", "--deployment", ""}, "clinic"},
		{[]string{"audit", "export", "--deployment", "cl"}, "clinic"},
		{[]string{"bind", "inspect", ""}, "clinic"},
		{[]string{"connection", "show", ""}, "sandbox"},
		{[]string{"connection", "verify", "s"}, "sandbox"},
		{[]string{"harness", "install", "--client", ""}, "zed"},
		{[]string{"harness", "inspect", "--client", "co"}, "codex"},
		{[]string{"harness", "install", "--client", "claude-code", "--scope", ""}, "local"},
		{[]string{"harness", "uninstall", "--scope", "p"}, "project"},
	} {
		names, directive := completions(t, c.args...)
		if !slices.Contains(names, c.want) {
			t.Errorf("complete %v: %v, want %s among them", c.args, names, c.want)
		}
		if directive != ":4" {
			t.Errorf("complete %v: directive %s, want no files (:4)", c.args, directive)
		}
	}
	names, directive := completions(t, "attention", "approve", "")
	if len(names) != 0 {
		t.Errorf("attention ids with none open: %v, want none", names)
	}
	if directive != ":4" {
		t.Errorf("attention ids with none open: directive %s, want no files (:4)", directive)
	}
	if names, _ := completions(t, "connection", "show", "sandbox", ""); len(names) != 0 {
		t.Errorf("a second argument completed: %v", names)
	}
	// A new connection's NAME is not an existing connection's.
	for _, add := range []string{"add-stdio", "add-remote", "add"} {
		if names, _ := completions(t, "connection", add, ""); slices.Contains(names, "sandbox") {
			t.Errorf("connection %s NAME completed with existing connections: %v", add, names)
		}
	}
	// No host: nothing offered, nothing created.
	empty := t.TempDir()
	t.Setenv("OA_HOME", empty)
	names, directive = completions(t, "connection", "show", "")
	if len(names) != 0 {
		t.Errorf("no host: %v, want none", names)
	}
	if directive != ":4" {
		t.Errorf("no host: directive %s, want no files (:4)", directive)
	}
	if _, err := os.Stat(filepath.Join(empty, host.StateFile)); !os.IsNotExist(err) {
		t.Errorf("completion created the host's state: %v", err)
	}
}
