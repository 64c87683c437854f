package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oa-dev/oa/harness"
)

// TestClaudeCodeLocalScope installs into Claude Code's local scope: the
// entry lands in the user's ~/.claude.json under projects[DIR].mcpServers
// (DIR with links resolved, as Claude Code keys it), the project's
// .mcp.json, which teams commit, is not written, inspect matches, and
// uninstall gives ~/.claude.json back byte for byte: beside Claude Code's
// own state and another project, in a project object Claude Code made,
// and with no file at all.
func TestClaudeCodeLocalScope(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exe, _ := os.Executable()
	project := t.TempDir()
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := json.Marshal(real)
	for name, existing := range map[string]string{
		"no file":            "",
		"other projects":     `{"numStartups": 12, "projects": {"/srv/other": {"mcpServers": {"notes": {"command": "notes"}}}}, "userID": "x"}` + "\n",
		"project of its own": "{\n  \"projects\": {\n    " + string(key) + ": {\n      \"allowedTools\": [],\n      \"hasTrustDialogAccepted\": true\n    }\n  }\n}\n",
		"empty servers":      "{\n  \"projects\": {\n    " + string(key) + ": {\n      \"mcpServers\": {}\n    }\n  }\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			cfg := filepath.Join(home, ".claude.json")
			if existing != "" {
				if err := os.WriteFile(cfg, []byte(existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: harness.ClientClaudeCode, Scope: harness.ScopeLocal, Dir: project, Executable: exe, GOOS: "linux", Getenv: func(k string) string {
				if k == "HOME" {
					return home
				}
				return ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			inst, err := m.Prepare(ctx, "clinic")
			mustMatch(t, inst, err)
			var doc struct {
				Projects map[string]struct {
					MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
				} `json:"projects"`
			}
			b, _ := os.ReadFile(cfg)
			if err := json.Unmarshal(b, &doc); err != nil || doc.Projects[real].MCPServers["oa-clinic"].Command != exe {
				t.Fatalf("no local entry for %s: %v\n%s", real, err, b)
			}
			if _, err := os.Stat(filepath.Join(project, ".mcp.json")); err == nil {
				t.Fatal("the project's .mcp.json was written")
			}
			inst, err = m.Inspect(ctx, "clinic")
			mustMatch(t, inst, err)
			r, err := m.Uninstall(ctx, "clinic")
			if err != nil || r.Err() != nil {
				t.Fatalf("uninstall: %v %v", err, r.Err())
			}
			got, err := os.ReadFile(cfg)
			if existing == "" {
				if err == nil {
					t.Fatalf("the created ~/.claude.json was left:\n%s", got)
				}
			} else if string(got) != existing {
				t.Fatalf("uninstall did not give ~/.claude.json back:\n%s\nwant\n%s", got, existing)
			}
			if left := tree(t, project); !slices.Equal(left, []string(nil)) {
				t.Fatalf("uninstall left %v in the project", left)
			}
		})
	}
	if _, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: harness.ClientCursor, Scope: harness.ScopeLocal, Dir: project}); err == nil {
		t.Fatal("a scope for a client without one was taken")
	}
}

// TestClaudeCodeLocalScopeConfigDir: with CLAUDE_CONFIG_DIR set, Claude
// Code keeps its .claude.json there and reads no ~/.claude.json, so the
// local-scope entry goes to $CLAUDE_CONFIG_DIR/.claude.json; inspect
// matches and uninstall removes the file it created.
func TestClaudeCodeLocalScopeConfigDir(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exe, _ := os.Executable()
	project, home, cfgDir := t.TempDir(), t.TempDir(), t.TempDir()
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: harness.ClientClaudeCode, Scope: harness.ScopeLocal, Dir: project, Executable: exe, GOOS: "linux", Getenv: func(k string) string {
		return map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": cfgDir}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := m.Prepare(ctx, "clinic")
	mustMatch(t, inst, err)
	cfg := filepath.Join(cfgDir, ".claude.json")
	var doc struct {
		Projects map[string]struct {
			MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
		} `json:"projects"`
	}
	b, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(b, &doc); err != nil || doc.Projects[real].MCPServers["oa-clinic"].Command != exe {
		t.Fatalf("no local entry in $CLAUDE_CONFIG_DIR/.claude.json: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
		t.Fatal("~/.claude.json was written although CLAUDE_CONFIG_DIR is set")
	}
	inst, err = m.Inspect(ctx, "clinic")
	mustMatch(t, inst, err)
	if r, err := m.Uninstall(ctx, "clinic"); err != nil || r.Err() != nil {
		t.Fatalf("uninstall: %v %v", err, r.Err())
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Fatal("the created $CLAUDE_CONFIG_DIR/.claude.json was left")
	}
}
