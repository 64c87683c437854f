package coordinator_test

import (
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

// TestAttentionShowServerMemory: a run of the pinned npm server-memory,
// confined, whose entity creation needs a person's approval, pauses; `oa
// attention show` (the real binary) prints the entity and the
// observation text the call would write, and the agent saw neither.
func TestAttentionShowServerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and starts an npm server")
	}
	servers := interoptest.Confine(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the npm servers: %v", err)
	}
	memDir := t.TempDir()
	t.Setenv("MEMORY_FILE_PATH", filepath.Join(memDir, "memory.jsonl"))
	h := &servetest.Host{Host: hosttest.New(t, useBundle(t, "confined-npm")), OA: servetest.Binary(t)}
	reg := strings.Replace(confinedNpmRegistry(), `description: "Create entities in the knowledge graph."`, `description: "Create entities in the knowledge graph.", approval: "required"`, 1)
	h.WriteRegistry(reg)
	host := h.Open()
	h.AddConnection(host, "memory", "npm.memory", connector.Config{Command: node, Args: []string{servers.Memory}, Env: []string{"MEMORY_FILE_PATH"},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{memDir}}})
	root := t.TempDir()
	h.AddConnection(host, "files", "npm.files", connector.Config{Command: node, Args: []string{servers.Filesystem, root},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{root}}})
	h.Bind(host, "claude-test")
	c := h.Connect(t, servetest.ClientOptions{})

	const observation = "Seen by Dr Ada: wheeze on exertion"
	out, code := c.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "record_entity", "request_id": "mem-1", "wait_seconds": 60,
		"inputs": map[string]any{"name": "AB-1234", "observation": observation}})
	id, _ := out["attention_id"].(string)
	if code != "" {
		t.Fatalf("run_workflow refused with code %q: %v\nstderr:\n%s", code, out, c.Stderr)
	}
	if out["reason"] != string(contract.ReasonApprovalRequired) {
		t.Fatalf("run_workflow: reason %v, want %s: %v\nstderr:\n%s", out["reason"], contract.ReasonApprovalRequired, out, c.Stderr)
	}
	if id == "" {
		t.Fatalf("run_workflow: no attention_id: %v", out)
	}
	cmd := exec.Command(h.OA, "attention", "show", id)
	cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
	show, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("oa attention show: %v\n%s", err, show)
	}
	for _, want := range []string{"connection memory, tool create_entities", `"name": "AB-1234"`, `"` + observation + `"`, "Record a new entity"} {
		if !strings.Contains(string(show), want) {
			t.Errorf("oa attention show lacks %q:\n%s", want, show)
		}
	}
	if seen := strings.Join(c.Seen(), "\n"); strings.Contains(seen, "wheeze") {
		t.Errorf("the agent saw the observation:\n%s", seen)
	}
}
