package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestInspectNamesAMissingSetting (issue 39): a deployment whose
// connection takes a variable from oa's environment (--env NAME) is
// installed into a client, whose entry sets only OA_HOME: oa harness
// inspect said every check passed while every run ended app_offline; it
// now fails the settings check with connection_setting_missing, naming
// the variable and the connection, never a value. Once the entry sets
// it, the installation matches.
func TestInspectNamesAMissingSetting(t *testing.T) {
	const name = "OA_TEST_MEMORY_FILE"
	t.Setenv(name, "/very/secret/looking/path")
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	f.host = f.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`), Result: json.RawMessage(`{"saved":true}`)},
	})
	f.AddConnection(f.host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools},
		Env: []string{name}, Confinement: &confine.Profile{Unconfined: true}})
	f.bind("claude-test")

	dir := t.TempDir()
	m := f.client(t, harness.ClientClaudeCode, dir)
	inst, err := m.Prepare(context.Background(), "clinic")
	if err != nil {
		t.Fatal(err)
	}
	if got := failed(inst); len(got) != 1 || got[harness.CheckSettings] != blocking.ConnectionSettingMissing {
		t.Fatalf("install: failed checks %v, want settings=connection_setting_missing", got)
	}
	inst = mismatch(t, m, harness.CheckSettings, blocking.ConnectionSettingMissing)
	d := detail(inst, harness.CheckSettings)
	if !strings.Contains(d, name) || !strings.Contains(d, "records") || strings.Contains(d, "/very/secret") {
		t.Fatalf("settings detail %q: want the variable and the connection, never the value", d)
	}

	// The operator sets it in the client's entry: the client now starts oa with it.
	file := filepath.Join(dir, ".mcp.json")
	cfg := readJSON(t, file)
	cfg["mcpServers"].(map[string]any)["oa-clinic"].(map[string]any)["env"].(map[string]any)[name] = "/srv/memory.json"
	out, _ := json.Marshal(cfg)
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err = m.Inspect(context.Background(), "clinic")
	mustMatch(t, inst, err)
}
