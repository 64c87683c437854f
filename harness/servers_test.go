package harness_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/harness"
)

// TestServersProposeConnections (issue 39): oa connection import reads
// the servers a client is configured with (Claude Code's .mcp.json, VS
// Code's servers with comments, Codex's TOML) and proposes one connection
// each — command, arguments, env NAMES, a remote's URL and header names,
// a confinement profile — leaving out oa's own entries; no env or header
// value, and no argument that looks like a secret, reaches a proposal.
func TestServersProposeConnections(t *testing.T) {
	const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	data := t.TempDir()
	mcp := `{
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/very/private/memory.json"}},
    "files": {"command": "/usr/bin/node", "args": ["/usr/lib/fs/index.js", "` + data + `"]},
    "github": {"command": "github-mcp", "args": ["--token", "` + secret + `"], "env": {"GITHUB_TOKEN": "` + secret + `"}},
    "everything": {"type": "http", "url": "https://mcp.example.com/mcp?key=` + secret + `", "headers": {"Authorization": "Bearer ` + secret + `"}},
    "oa-clinic": {"command": "/usr/local/bin/oa", "args": ["coordinator", "serve", "--deployment", "clinic"], "env": {"OA_HOME": "/h"}}
  }
}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(mcp), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: t.TempDir(), Client: harness.ClientClaudeCode, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, servers, err := m.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var proposals []connection.Proposal
	for _, s := range servers {
		proposals = append(proposals, connection.Propose(s))
	}
	out, _ := json.Marshal(proposals)
	if strings.Contains(string(out), secret) || strings.Contains(string(out), "/very/private") {
		t.Fatalf("a value reached the proposals: %s", out)
	}
	byName := map[string]connection.Proposal{}
	for _, p := range proposals {
		byName[p.Name] = p
	}
	if len(proposals) != 4 || byName["oa-clinic"].Name != "" {
		t.Fatalf("proposals %s: want memory, files, github, everything and not oa's own entry", out)
	}
	mem := byName["memory"]
	if mem.Connector != "npm.modelcontextprotocol-server-memory" || !mem.Preinstall || !slices.Equal(mem.Env, []string{"MEMORY_FILE_PATH"}) ||
		!strings.Contains(mem.Add, "--env MEMORY_FILE_PATH --preinstall --as NAME -- npx -y @modelcontextprotocol/server-memory") {
		t.Fatalf("memory: %+v", mem)
	}
	if files := byName["files"]; !slices.Equal(files.Write, []string{data}) || !strings.Contains(files.Add, "--write "+data) {
		t.Fatalf("files: %+v", files)
	}
	if gh := byName["github"]; len(gh.Args) != 1 || len(gh.Notes) == 0 {
		t.Fatalf("github: the secret argument must be left out and named: %+v", gh)
	}
	if ev := byName["everything"]; ev.URL != "https://mcp.example.com/mcp" || !slices.Equal(ev.Headers, []string{"Authorization"}) || !strings.Contains(ev.Add, "--header Authorization --secret-file FILE") {
		t.Fatalf("everything: %+v", ev)
	}

	// Codex: TOML under $CODEX_HOME.
	codex := t.TempDir()
	toml := "[mcp_servers.memory]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\nenv = { MEMORY_FILE_PATH = \"/very/private/memory.json\" }\n"
	if err := os.WriteFile(filepath.Join(codex, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = harness.NewMCPClient(harness.MCPClientOptions{Home: t.TempDir(), Client: harness.ClientCodex, Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return codex
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, servers, err = m.Servers(); err != nil || len(servers) != 1 || servers[0].Name != "memory" || !slices.Equal(servers[0].Env, []string{"MEMORY_FILE_PATH"}) {
		t.Fatalf("codex servers %+v %v", servers, err)
	}
}
