package harness_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
)

// TestListClients: List names every client in each scope, installed when
// its configuration file or executable is found, with each oa entry's
// state: one as installed matches, one edited since differs naming its
// check, one with no install record differs with harness_not_installed;
// other servers are not listed, and nothing is written.
func TestListClients(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exe, _ := os.Executable()
	home, project := t.TempDir(), t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	install := func(client, dir string) *harness.MCPClient {
		t.Helper()
		m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: client, Dir: dir, Executable: exe, GOOS: "linux", Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		inst, err := m.Prepare(ctx, "clinic")
		mustMatch(t, inst, err)
		return m
	}
	install(harness.ClientClaudeCode, project)
	install(harness.ClientCodex, "")
	// Codex's entry edited since install; a hand-written oa entry in Cursor.
	cfg := filepath.Join(home, ".codex", "config.toml")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "'--deployment'", "'--verbose', '--deployment'", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	cursor := `{"mcpServers": {"notes": {"command": "notes"}, "oa-clinic": {"command": "` + exe + `", "args": ["coordinator", "serve", "--deployment", "clinic"]}}}`
	if err := os.WriteFile(filepath.Join(project, ".cursor", "mcp.json"), []byte(cursor), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, home)
	lookPath := func(name string) (string, error) {
		if name == "gemini" {
			return "/usr/local/bin/gemini", nil
		}
		return "", exec.ErrNotFound
	}
	got, err := harness.List(ctx, harness.ListOptions{Home: f.Home, Dir: project, Getenv: getenv, GOOS: "linux", LookPath: lookPath})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]harness.ClientListing{}
	var names []string
	for _, c := range got {
		rows[c.Client+"/"+c.Scope] = c
		names = append(names, c.Client+"/"+c.Scope)
	}
	want := []string{"claude-code/local", "claude-code/project", "claude-desktop/user", "cursor/project", "vscode/project", "codex/project", "codex/user", "gemini-cli/project", "windsurf/user", "zed/project"}
	if !slices.Equal(names, want) {
		t.Fatalf("rows %v, want %v", names, want)
	}
	entry := func(row string) harness.ListedEntry {
		t.Helper()
		r := rows[row]
		if !r.Installed || len(r.Entries) != 1 || r.Entries[0].Name != "oa-clinic" || r.Entries[0].Deployment != "clinic" {
			t.Fatalf("%s: %+v", row, r)
		}
		return r.Entries[0]
	}
	if e := entry("claude-code/project"); e.State != harness.EntryMatches || len(e.Codes) != 0 {
		t.Fatalf("claude-code: %+v", e)
	}
	if e := entry("codex/user"); e.State != harness.EntryDiffers || !slices.Contains(e.Codes, blocking.HarnessServerEntryChanged) {
		t.Fatalf("edited codex entry: %+v", e)
	}
	if e := entry("cursor/project"); e.State != harness.EntryDiffers || !slices.Contains(e.Codes, blocking.HarnessNotInstalled) {
		t.Fatalf("hand-written cursor entry: %+v", e)
	}
	if r := rows["gemini-cli/project"]; !r.Installed || r.ConfigFound || r.Binary != "/usr/local/bin/gemini" || len(r.Entries) != 0 {
		t.Fatalf("gemini found by its executable: %+v", r)
	}
	for _, row := range []string{"claude-code/local", "claude-desktop/user", "vscode/project", "codex/project", "windsurf/user", "zed/project"} {
		if r := rows[row]; r.Installed || r.ConfigFound || len(r.Entries) != 0 || r.Problem != nil {
			t.Fatalf("%s is not on this machine: %+v", row, r)
		}
	}
	if after := tree(t, home); !slices.Equal(before, after) {
		t.Fatalf("list wrote %v", after)
	}

	// A configuration that does not parse is the row's problem, not a failure.
	if err := os.WriteFile(filepath.Join(project, ".cursor", "mcp.json"), []byte("{ not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = harness.List(ctx, harness.ListOptions{Home: f.Home, Dir: project, Getenv: getenv, GOOS: "linux", LookPath: lookPath})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Client == harness.ClientCursor && (c.Problem == nil || c.Problem.Code != blocking.HarnessClientConfigInvalid || !c.Installed) {
			t.Fatalf("unparsable cursor config: %+v", c)
		}
	}
}
