package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConnectionImportClaudeCodeScopes: oa connection import --client
// claude-code reads both of Claude Code's scopes, the local one (the
// user's ~/.claude.json, projects[DIR].mcpServers, where claude mcp add
// writes by default) first and then the project's .mcp.json, proposing a
// server named in both once, from the local scope; --scope reads one; a
// scope for another client is a usage error.
func TestConnectionImportClaudeCodeScopes(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("OA_HOME", t.TempDir())
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := json.Marshal(real)
	local := `{"numStartups": 3, "projects": {` + string(key) + `: {"mcpServers": {"memory": {"command": "memory-server"}, "docs": {"command": "docs-local"}}}, "/srv/other": {"mcpServers": {"elsewhere": {"command": "x"}}}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"docs": {"command": "docs-shared"}, "notes": {"command": "notes-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	imported := func(args ...string) (names []string, commands []string, files []string) {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"connection", "import", "--client", "claude-code", "--dir", dir, "--json"}, args...)...)
		var got struct {
			Files     []string `json:"files"`
			Proposals []struct {
				Name    string `json:"name"`
				Command string `json:"command"`
			} `json:"proposals"`
		}
		what := "import " + strings.Join(args, " ")
		wantExit(t, what, code, 0, out, errOut)
		wantJSON(t, what, out, &got)
		for _, p := range got.Proposals {
			names, commands = append(names, p.Name), append(commands, p.Command)
		}
		return names, commands, got.Files
	}
	names, commands, files := imported()
	if want := []string{"memory", "docs", "notes"}; !slices.Equal(names, want) {
		t.Fatalf("both scopes: names %q, want %q", names, want)
	}
	if !strings.HasSuffix(commands[1], "docs-local") {
		t.Fatalf("both scopes: docs command %q, want suffix docs-local (the local scope's)", commands[1])
	}
	if want := []string{filepath.Join(home, ".claude.json"), filepath.Join(dir, ".mcp.json")}; !slices.Equal(files, want) {
		t.Fatalf("both scopes: files %q, want %q", files, want)
	}
	if names, _, _ = imported("--scope", "project"); !slices.Equal(names, []string{"docs", "notes"}) {
		t.Fatalf("--scope project: %v", names)
	}
	if names, _, _ = imported("--scope", "local"); !slices.Equal(names, []string{"memory", "docs"}) {
		t.Fatalf("--scope local: %v", names)
	}
	_, errOut, code := runCLI(t, "connection", "import", "--client", "cursor", "--dir", dir, "--scope", "local")
	wantExit(t, "--scope for cursor", code, 2, "", errOut)
	wantHas(t, "--scope for cursor", errOut, "--scope is for claude-code")
}
