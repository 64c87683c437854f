package coordinator_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// confinedNpmRegistry maps the capabilities of testdata/confined-npm to
// the tools of the two stock npm servers.
func confinedNpmRegistry() string {
	return fmt.Sprintf(`package host

host: %q

capabilities: {
	"memory.entity.read": {risk: "read_only", description: "Read entities of the knowledge graph by name."}
	"memory.entity.create": {risk: "consequential", description: "Create entities in the knowledge graph."}
	"files.read": {risk: "read_only", description: "Read a text file."}
	"files.write": {risk: "consequential", description: "Write a text file."}
}

connectors: {
	"npm.memory": {availability: "available"}
	"npm.files": {availability: "available"}
}

tools: [
	{name: "open_nodes", connector: "npm.memory", capability: "memory.entity.read", risk: "read_only", enabled: true},
	{name: "create_entities", connector: "npm.memory", capability: "memory.entity.create", risk: "consequential", enabled: true},
	{name: "read_text_file", connector: "npm.files", capability: "files.read", risk: "read_only", enabled: true},
	{name: "write_file", connector: "npm.files", capability: "files.write", risk: "consequential", enabled: true},
%s]
`, hosttest.Name, disabledTools())
}

// disabledTools lists the servers' other tools, disabled: a connection the
// package uses may expose nothing the registry does not name.
func disabledTools() string {
	var b strings.Builder
	for _, t := range []struct {
		connector, capability, risk string
		names                       []string
	}{
		{"npm.memory", "memory.entity.read", "read_only", []string{"read_graph", "search_nodes"}},
		{"npm.memory", "memory.entity.create", "consequential", []string{"create_relations", "add_observations", "delete_entities", "delete_observations", "delete_relations"}},
		{"npm.files", "files.read", "read_only", []string{"read_file", "read_media_file", "read_multiple_files", "list_directory", "list_directory_with_sizes", "directory_tree", "search_files", "get_file_info", "list_allowed_directories"}},
		{"npm.files", "files.write", "consequential", []string{"edit_file", "create_directory", "move_file"}},
	} {
		for _, name := range t.names {
			fmt.Fprintf(&b, "\t{name: %q, connector: %q, capability: %q, risk: %q, enabled: false},\n", name, t.connector, t.capability, t.risk)
		}
	}
	return b.String()
}

// useBundle replaces the example bundle hosttest.New writes with the
// testdata bundle called name.
func useBundle(t testing.TB, name string) func(string) {
	return func(dir string) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConfinedNpmServersGoverned runs governed workflows through `oa
// coordinator serve` (a real subprocess, whose launcher is the oa binary
// itself) against the two pinned stock npm servers, each confined by the
// profile its connection records and the plan carries: server-memory may
// write only its memory file's folder, server-filesystem only its root,
// though its own arguments also allow a second folder. Runs inside the
// profile are done; a read or a write that reaches the second folder
// fails inside the server (the kernel's EACCES), and the run ends with
// the closed outcome the coordinator's rules give it — did_not_run before
// any change, not_sure_if_saved after an effect the server answered with
// an error — with nothing of the server's error, the refused file or its
// path in anything the agent saw.
func TestConfinedNpmServersGoverned(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and starts npm servers")
	}
	servers := interoptest.Confine(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the npm servers: %v", err)
	}
	memDir, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	memFile := filepath.Join(memDir, "memory.jsonl")
	// The connection passes this variable on from oa's environment, to the
	// verification here and to the coordinator subprocess alike.
	t.Setenv("MEMORY_FILE_PATH", memFile)
	source, secret := filepath.Join(root, "source.txt"), filepath.Join(outside, "secret.txt")
	for path, text := range map[string]string{source: "inside text", secret: "operator secret"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	h := &servetest.Host{Host: hosttest.New(t, useBundle(t, "confined-npm")), OA: servetest.Binary(t)}
	h.WriteRegistry(confinedNpmRegistry())
	host := h.Open()
	h.AddConnection(host, "memory", "npm.memory", connector.Config{Command: node, Args: []string{servers.Memory}, Env: []string{"MEMORY_FILE_PATH"},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{memDir}}})
	h.AddConnection(host, "files", "npm.files", connector.Config{Command: node, Args: []string{servers.Filesystem, root, outside},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{root}}})
	h.Bind(host, "claude-test")
	c := h.Connect(t, servetest.ClientOptions{})

	run := func(workflow, id string, inputs map[string]any) map[string]any {
		t.Helper()
		out, code := c.Call(contract.ToolRunWorkflow, map[string]any{"workflow": workflow, "inputs": inputs, "request_id": id, "wait_seconds": 60})
		if code != "" {
			t.Fatalf("run_workflow %s: tool error %s\nstderr:\n%s", id, code, c.Stderr)
		}
		return out
	}

	// server-memory: the workflow reads (absent), creates, reads back.
	entity := map[string]any{"name": "AB-1234", "observation": "triaged"}
	want(t, "record_entity", run("record_entity", "mem-1", entity), contract.OutcomeDone, contract.ReasonVerified)
	if b, err := os.ReadFile(memFile); err != nil {
		t.Fatalf("the graph is not in the allowed folder: %v", err)
	} else if !strings.Contains(string(b), "AB-1234") {
		t.Fatalf("the graph in the allowed folder has no AB-1234: %q", b)
	}
	// A second request for the same entity reads it (the graph persists
	// in the allowed folder) and stops at the guard.
	want(t, "record_entity again", run("record_entity", "mem-2", entity), contract.OutcomeDidNotRun, contract.ReasonGuardFailed)

	// server-filesystem: a governed read inside the root, through the read
	// capability tool, and a copy within the root.
	read, code := c.Call(contract.ToolName("files.read"), map[string]any{"path": source})
	if code != "" {
		t.Fatalf("reading inside the root: refused with code %q: %v", code, read)
	}
	if read["outcome"] != string(contract.OutcomeDone) {
		t.Fatalf("reading inside the root: outcome %v (reason %v), want %s", read["outcome"], read["reason"], contract.OutcomeDone)
	}
	if content := fmt.Sprint(read["content"]); !strings.Contains(content, "inside text") {
		t.Fatalf("reading inside the root: content %q, want inside text", content)
	}
	dest := filepath.Join(root, "copy.txt")
	want(t, "copy_file inside", run("copy_file", "files-1", map[string]any{"source": source, "dest": dest}), contract.OutcomeDone, contract.ReasonVerified)
	if b, err := os.ReadFile(dest); err != nil {
		t.Fatalf("the copy: %v", err)
	} else if string(b) != "inside text" {
		t.Fatalf("the copy holds %q, want inside text", b)
	}

	// Reaching outside the root: the server's own check lets it try, the
	// kernel refuses.
	read, code = c.Call(contract.ToolName("files.read"), map[string]any{"path": secret})
	if code != "" {
		t.Fatalf("reading outside the root: refused with code %q, want a did_not_run result: %v", code, read)
	}
	want(t, "reading outside the root", read, contract.OutcomeDidNotRun, contract.ReasonTargetRefused)
	if read["content"] != nil {
		t.Fatalf("reading outside the root: content %v, want none", read["content"])
	}
	stolen := filepath.Join(root, "stolen.txt")
	want(t, "copy_file from outside", run("copy_file", "files-2", map[string]any{"source": secret, "dest": stolen}), contract.OutcomeDidNotRun, contract.ReasonReadFailed)
	if _, err := os.Stat(stolen); !os.IsNotExist(err) {
		t.Fatalf("a copy of the refused file was written: %v", err)
	}
	dropped := filepath.Join(outside, "dropped.txt")
	want(t, "copy_file to outside", run("copy_file", "files-3", map[string]any{"source": source, "dest": dropped}), contract.OutcomeNotSureIfSaved, contract.ReasonEffectUnclear)
	if _, err := os.Stat(dropped); !os.IsNotExist(err) {
		t.Fatalf("the write outside the root made a file: %v", err)
	}

	// Nothing the server said about the refusals reached the agent.
	seen := strings.Join(c.Seen(), "\n")
	for _, leak := range []string{"operator secret", "EACCES", "ermission denied", "secret.txt", "dropped.txt", outside} {
		if strings.Contains(seen, leak) {
			t.Errorf("the agent saw %q:\n%s", leak, seen)
		}
	}
}
