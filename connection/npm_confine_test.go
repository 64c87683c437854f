package connection_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// TestConfinedNpmServers runs two stock npm MCP servers (pinned by
// testkit/interoptest/npm/confine/package-lock.json) confined end to end:
// each is added with the profile it needs, verified (started, listed)
// under it, and called. server-memory keeps its graph in the one folder
// it may write; server-filesystem serves files under its root, and a
// call to a second folder its own arguments allow but the profile does
// not fails inside the server, with the kernel's EACCES.
func TestConfinedNpmServers(t *testing.T) {
	servers := interoptest.Confine(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the npm servers: %v", err)
	}
	home, h := newHost(t)
	defer h.Close()
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	open := func(t *testing.T, name string, cfg connector.Config) *connector.Session {
		t.Helper()
		if _, err := connection.Add(ctx, h, connection.AddOptions{Name: name, Connector: "npm.test", Config: cfg}, change); err != nil {
			t.Fatal(err)
		}
		rec, err := connection.Verify(ctx, h, name, connector.Options{}, change)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: confine.ModeUnconfined, false: confine.ModeConfined}[cfg.Confinement.IsUnconfined()]; rec.Verification.Enforced == nil || rec.Verification.Enforced.Mode != want {
			t.Fatalf("verified %+v, want %s", rec.Verification.Enforced, want)
		}
		s, err := connector.Open(ctx, rec.Config, connection.StartOptions(home, name, connector.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	call := func(t *testing.T, s *connector.Session, tool string, args map[string]any) *connector.CallResult {
		t.Helper()
		res, err := s.Call(ctx, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}

	t.Run("memory", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("MEMORY_FILE_PATH", filepath.Join(dir, "memory.jsonl"))
		s := open(t, "memory", connector.Config{Command: node, Args: []string{servers.Memory}, Env: []string{"MEMORY_FILE_PATH"},
			Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{dir}}})
		res := call(t, s, "create_entities", map[string]any{"entities": []map[string]any{{"name": "AB-1234", "entityType": "record", "observations": []string{"triaged"}}}})
		if res.IsError {
			t.Fatalf("create_entities failed: %s", res.Structured)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "memory.jsonl")); err != nil || !strings.Contains(string(b), "AB-1234") {
			t.Fatalf("the graph is not in the allowed folder: %q, %v", b, err)
		}
		if res := call(t, s, "read_graph", map[string]any{}); res.IsError || !strings.Contains(string(res.Structured), "AB-1234") {
			t.Fatalf("read_graph: %s", res.Structured)
		}
	})

	t.Run("filesystem", func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		secret := filepath.Join(outside, "secret.txt")
		if err := os.WriteFile(secret, []byte("operator secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The server is told it may serve both folders; the profile lets
		// it reach only root.
		s := open(t, "files", connector.Config{Command: node, Args: []string{servers.Filesystem, root, outside},
			Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{root}}})
		inside := filepath.Join(root, "note.txt")
		if res := call(t, s, "write_file", map[string]any{"path": inside, "content": "a note"}); res.IsError {
			t.Fatalf("write_file inside the root failed: %s", res.Structured)
		}
		if b, err := os.ReadFile(inside); err != nil || string(b) != "a note" {
			t.Fatalf("the note: %q, %v", b, err)
		}
		if res := call(t, s, "read_text_file", map[string]any{"path": inside}); res.IsError || !strings.Contains(string(res.Structured), "a note") {
			t.Fatalf("read_text_file inside the root: %s", res.Structured)
		}
		res := call(t, s, "read_text_file", map[string]any{"path": secret})
		if !res.IsError || strings.Contains(string(res.Structured), "operator secret") {
			t.Fatalf("reading outside the root answered %s, want a tool error", res.Structured)
		}
		res = call(t, s, "write_file", map[string]any{"path": filepath.Join(outside, "dropped.txt"), "content": "x"})
		if _, err := os.Stat(filepath.Join(outside, "dropped.txt")); !res.IsError || err == nil {
			t.Fatalf("writing outside the root answered %s (file: %v), want a tool error and no file", res.Structured, err)
		}
		// The control: the same server unconfined reads the file, so the
		// refusal above is the kernel's, not the server's own check.
		open := open(t, "files-unconfined", connector.Config{Command: node, Args: []string{servers.Filesystem, root, outside}, Confinement: &confine.Profile{Unconfined: true}})
		if res := call(t, open, "read_text_file", map[string]any{"path": secret}); res.IsError || !strings.Contains(string(res.Structured), "operator secret") {
			t.Fatalf("unconfined, reading the file answered %s", res.Structured)
		}
	})
}

// TestPreinstalledNpxServer (issue 39): `npx -y PACKAGE` confined fetched
// its package at each start and failed with no network. With Preinstall
// the package is installed once, at add time, into the connection's own
// folder, the recorded command is the package's own, and the server is
// verified and called confined with no network at all.
func TestPreinstalledNpxServer(t *testing.T) {
	interoptest.Confine(t) // npm, and the pinned packages in npm's cache
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed to run the npm servers: %v", err)
	}
	home, h := newHost(t)
	defer h.Close()
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	cfg := connector.Config{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"}}
	rec, err := connection.Add(ctx, h, connection.AddOptions{Name: "memory", Connector: "npm.server-memory", Config: cfg, Preinstall: true}, change)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Config.Confinement != nil || !strings.HasPrefix(rec.Config.Command, connection.PrivateDir(home, "memory")) || len(rec.Config.Args) != 0 {
		t.Fatalf("recorded %+v: want the package's own command in the connection's folder, the default profile (no network)", rec.Config)
	}
	rec, err = connection.Verify(ctx, h, "memory", connector.Options{}, change)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verification.Enforced == nil || rec.Verification.Enforced.Mode != confine.ModeConfined {
		t.Fatalf("verified %+v, want confined", rec.Verification.Enforced)
	}
	if _, ok := rec.Verification.Inventory.Tool("create_entities"); !ok {
		t.Fatalf("the preinstalled server-memory lists no create_entities: %+v", rec.Verification.Inventory.Tools)
	}
	s, err := connector.Open(ctx, rec.Config, connection.StartOptions(home, "memory", connector.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "read_graph", map[string]any{}); err != nil {
		t.Fatalf("read_graph: %v", err)
	}
}
