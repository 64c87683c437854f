package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestConnectionAddIsADeprecatedAlias: oa connection add, split into
// add-stdio and add-remote, still adds either kind (users have scripts),
// telling on stderr the command that replaces it; stdout holds only the
// result, so --json stays JSON.
func TestConnectionAddIsADeprecatedAlias(t *testing.T) {
	h := hosttest.New(t, nil)
	t.Setenv("OA_HOME", h.Home)
	const notice = `Command "add" is deprecated, use oa connection add-stdio NAME -- COMMAND ARGS… for a server run over stdio, or oa connection add-remote NAME URL for a remote one`

	out, errOut, code := runCLI(t, "connection", "add", "sandbox", "--connector", resolve.SandboxConnector, "--as", "Dr Ada", "--", "builtin:sandbox-records")
	if code != 0 {
		t.Fatalf("connection add (stdio): exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "connection sandbox added") {
		t.Errorf("connection add (stdio) printed %q, want the connection added", out)
	}
	if !strings.Contains(errOut, notice) {
		t.Errorf("connection add (stdio): stderr %q does not name the new commands", errOut)
	}

	out, errOut, code = runCLI(t, "connection", "add", "far", "--url", "https://mcp.example.com/mcp", "--connector", "far.test", "--as", "Dr Ada", "--json")
	if code != 0 {
		t.Fatalf("connection add --url: exit %d\n%s", code, errOut)
	}
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Errorf("connection add --url --json: stdout is not JSON (%v): %q", err, out)
	}
	if v.Name != "far" {
		t.Errorf("connection add --url --json: name %q, want far", v.Name)
	}
	if !strings.Contains(errOut, notice) {
		t.Errorf("connection add --url: stderr %q does not name the new commands", errOut)
	}
}

// TestConnectionAddStdioAndRemoteKeepToTheirKind: each of the split
// commands takes its own kind of server only, and says which command
// takes the other.
func TestConnectionAddStdioAndRemoteKeepToTheirKind(t *testing.T) {
	h := hosttest.New(t, nil)
	t.Setenv("OA_HOME", h.Home)
	dir := t.TempDir()
	remoteJSON := filepath.Join(dir, "remote.json")
	if err := os.WriteFile(remoteJSON, []byte(`{"name": "io.github.x/far", "remotes": [{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdioJSON := filepath.Join(dir, "stdio.json")
	if err := os.WriteFile(stdioJSON, []byte(memoryServerJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"connection", "add-stdio", "far", "--connector", "far.test", "--from-server-json", remoteJSON, "--as", "Dr Ada"}, "the server.json describes a remote server: use oa connection add-remote NAME --from-server-json F"},
		{[]string{"connection", "add-remote", "memory", "--connector", "npm.memory", "--from-server-json", stdioJSON, "--as", "Dr Ada"}, "the server.json describes a stdio package: use oa connection add-stdio NAME --from-server-json F"},
		{[]string{"connection", "add-remote", "far", "--connector", "far.test", "--as", "Dr Ada"}, "give NAME and the server's URL (or --from-server-json F)"},
		{[]string{"connection", "add-stdio", "far", "--connector", "far.test", "--as", "Dr Ada"}, "give NAME, then -- and the server's command (or oa connection add-remote NAME URL for a remote server)"},
		{[]string{"connection", "add-stdio", "far", "--url", "https://mcp.example.com/mcp", "--connector", "far.test", "--as", "Dr Ada"}, "unknown flag: --url"},
		{[]string{"connection", "add-remote", "far", "https://mcp.example.com/mcp", "--connector", "far.test", "--read", "/tmp", "--as", "Dr Ada"}, "unknown flag: --read"},
		{[]string{"connection", "add-remote", "far", "https://mcp.example.com/mcp", "--connector", "far.test", "--env", "X", "--as", "Dr Ada"}, "unknown flag: --env"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("oa %s: exit %d, want 2 (a usage error)", strings.Join(c.args, " "), code)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("oa %s: stderr %q, want %q", strings.Join(c.args, " "), errOut, c.want)
		}
	}
	out, errOut, code := runCLI(t, "connection", "add-remote", "far", "--connector", "far.test", "--from-server-json", remoteJSON, "--as", "Dr Ada")
	if code != 0 {
		t.Fatalf("add-remote --from-server-json: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "connection far added") {
		t.Errorf("add-remote --from-server-json printed %q", out)
	}
	if errOut != "" {
		t.Errorf("add-remote printed on stderr: %q", errOut)
	}
}
