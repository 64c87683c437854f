package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/testkit/interoptest"
)

// memoryServerJSON is an MCP registry server.json for the pinned npm
// server-memory, with a plain setting.
const memoryServerJSON = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
  "name": "io.github.modelcontextprotocol/server-memory",
  "version": "2026.8.31",
  "packages": [{
    "registryType": "npm", "identifier": "@modelcontextprotocol/server-memory", "version": "2026.8.31",
    "runtimeHint": "npx", "transport": {"type": "stdio"},
    "environmentVariables": [{"name": "MEMORY_FILE_PATH", "isRequired": false, "isSecret": false}]
  }]
}`

// TestBringNpmServer (issue 39) is a user bringing npm server-memory as
// people run it, end to end through the CLI: oa connection import
// proposes it from Claude Code's .mcp.json (the env value never shown);
// oa connection add --from-server-json takes its server.json, refused
// connection_command_unreadable without --preinstall (npx has no network
// confined) and recorded with it; verify lists its tools confined with no
// network; oa registry import writes its tools into the registry,
// disabled, and a second import adds nothing. A server.json oa cannot run
// is server_json_invalid, recording nothing.
func TestBringNpmServer(t *testing.T) {
	interoptest.Confine(t) // npm, and the pinned packages in npm's cache
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not installed")
	}
	p := newPublisher(t)
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))

	project := t.TempDir()
	mcp := `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"], "env": {"MEMORY_FILE_PATH": "/very/private/memory.json"}}}}`
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(mcp), 0o644); err != nil {
		t.Fatal(err)
	}
	out := p.ok("connection", "import", "--client", "claude-code", "--dir", project)
	wantHas(t, "oa connection import", out, "oa connection add-stdio memory --connector npm.modelcontextprotocol-server-memory --env MEMORY_FILE_PATH --preinstall --as NAME -- npx -y @modelcontextprotocol/server-memory@2026.8.31")
	wantLacks(t, "oa connection import", out, "/very/private")

	file := p.path("server.json")
	if err := os.WriteFile(file, []byte(memoryServerJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	add := []string{"connection", "add-stdio", "memory", "--connector", "npm.server-memory", "--from-server-json", file, "--env", "MEMORY_FILE_PATH=/srv/oa/memory.json", "--as", "Dr Ada"}
	if out := p.refused("connection_command_unreadable", add...); !strings.Contains(out, "--preinstall") {
		t.Fatalf("npx with no network: %s", out)
	}
	bad := p.path("bad.json")
	if err := os.WriteFile(bad, []byte(`{"name": "x", "packages": [{"registryType": "oci", "identifier": "x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.refused("server_json_invalid", "connection", "add-stdio", "memory", "--connector", "npm.server-memory", "--from-server-json", bad, "--as", "Dr Ada")
	if list := p.ok("connection", "list", "--json"); strings.TrimSpace(list) != "[]" {
		t.Fatalf("a refused add recorded a connection: %s", list)
	}

	p.ok(append(add, "--preinstall")...)
	out = p.ok("connection", "verify", "memory", "--as", "Dr Ada")
	wantHas(t, "verify", out, "verified", "confined by Landlock")

	p.ok("registry", "init")
	out = p.ok("registry", "import", "memory")
	wantHas(t, "oa registry import", out, "added  create_entities  consequential", "added  read_graph  read_only", "added  connector npm.server-memory  (disabled)")
	p.ok("registry", "check")
	if out := p.ok("registry", "import", "memory"); !strings.Contains(out, "nothing to add") {
		t.Fatalf("a second import:\n%s", out)
	}
}
