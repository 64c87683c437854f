package connection_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestAddRefusesACommandItsProfileCannotRead (issue 39): a server started
// as people start them — npx from an nvm tree (a link into
// lib/node_modules), a pyenv shim — failed confined with a bare
// "Permission denied". connection add now refuses it
// connection_command_unreadable, naming the path the command needs and
// the exact --read that grants it, and records nothing; with that --read
// it is recorded. npx without network is refused pointing at --preinstall.
func TestAddRefusesACommandItsProfileCannotRead(t *testing.T) {
	_, h := newHost(t)
	defer h.Close()
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An nvm-style tree: bin/mcp-tool is a link to the package's script.
	nodeRoot := filepath.Join(root, ".nvm", "versions", "node", "v22.1.0")
	write(filepath.Join(nodeRoot, "lib", "node_modules", "mcp-tool", "cli.js"), "#!/bin/sh\nexit 0\n")
	if err := os.MkdirAll(filepath.Join(nodeRoot, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../lib/node_modules/mcp-tool/cli.js", filepath.Join(nodeRoot, "bin", "mcp-tool")); err != nil {
		t.Fatal(err)
	}
	// A pyenv-style shim.
	pyenv := filepath.Join(root, ".pyenv")
	write(filepath.Join(pyenv, "shims", "mcp-py"), "#!/usr/bin/env bash\nexec pyenv exec mcp-py \"$@\"\n")
	t.Setenv("PATH", filepath.Join(nodeRoot, "bin")+":"+filepath.Join(pyenv, "shims")+":"+os.Getenv("PATH"))

	for _, tc := range []struct{ name, command, root string }{
		{"nvm", "mcp-tool", nodeRoot},
		{"pyenv", "mcp-py", pyenv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := connection.Add(ctx, h, connection.AddOptions{Name: tc.name, Connector: "npm.test", Config: connector.Config{Command: tc.command}}, change)
			if !hosttest.HasCode(t, err, blocking.ConnectionCommandUnreadable) {
				t.Fatalf("add: %v", err)
			}
			if d := blocking.Refusals(err)[0].Detail; !strings.Contains(d, "--read "+tc.root) {
				t.Fatalf("the refusal does not name --read %s: %s", tc.root, d)
			}
			if _, err := connection.Get(ctx, h, tc.name); !hosttest.HasCode(t, err, blocking.ConnectionUnknown) {
				t.Fatalf("a refused add recorded the connection: %v", err)
			}
			if _, err := connection.Add(ctx, h, connection.AddOptions{Name: tc.name, Connector: "npm.test", Config: connector.Config{Command: tc.command, Confinement: &confine.Profile{Read: []string{tc.root}}}}, change); err != nil {
				t.Fatalf("add with --read %s: %v", tc.root, err)
			}
		})
	}

	if _, err := exec.LookPath("npx"); err == nil {
		cfg := connector.Config{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}
		_, err := connection.Add(ctx, h, connection.AddOptions{Name: "npx", Connector: "npm.test", Config: cfg}, change)
		if !hosttest.HasCode(t, err, blocking.ConnectionCommandUnreadable) {
			t.Fatalf("npx with no network: %v", err)
		}
		if r := blocking.Refusals(err); !strings.Contains(r[0].Detail, "--preinstall") && !strings.Contains(r[0].Detail, "--read") {
			t.Fatalf("npx refusal: %s", r[0].Detail)
		}
	}
}
