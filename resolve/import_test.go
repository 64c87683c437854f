package resolve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestRegistryImport (issue 39): a server with many tools needed one
// hand-written registry entry per tool, or tool_outside_ceiling.
// ImportConnection writes one entry per tool of a verified connection's
// inventory that the registry does not list yet: disabled, read_only when
// readOnlyHint says so and consequential otherwise (destructiveHint
// noted), with a capability key to map; the entries the registry lists
// already are kept as written and named; the connector, unknown to the
// registry, is added disabled. A second import adds nothing; an
// unverified connection is refused and the file left as it was.
func TestRegistryImport(t *testing.T) {
	f := newFixture(t, starter())
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Result: json.RawMessage(`{}`)},
		{Name: "append_note", Description: "Append.", Annotations: json.RawMessage(`{"readOnlyHint":false}`), Result: json.RawMessage(`{}`)},
		{Name: "delete-Entities", Description: "Delete.", Annotations: json.RawMessage(`{"destructiveHint":true}`), Result: json.RawMessage(`{}`)},
		{Name: "search_nodes", Description: "Search.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Result: json.RawMessage(`{}`)},
	})
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: &confine.Profile{Unconfined: true}}
	f.addVerified("records", resolve.SandboxConnector, cfg)
	f.addVerified("memory", "npm.server-memory", cfg)
	path := filepath.Join(f.Home, resolve.RegistryFile)
	before, _ := os.ReadFile(path)

	imp, err := resolve.ImportConnection(context.Background(), f.host, path, "records")
	if err != nil {
		t.Fatal(err)
	}
	if !imp.Written || imp.ConnectorAdded || strings.Join(imp.Kept, ",") != "append_note,read_record" || len(imp.Added) != 2 {
		t.Fatalf("import of records: %+v", imp)
	}
	want := []resolve.ImportedTool{
		{Name: "delete-Entities", Capability: "sandbox.records.delete_entities", Risk: ir.Consequential, Destructive: true},
		{Name: "search_nodes", Capability: "sandbox.records.search_nodes", Risk: ir.ReadOnly},
	}
	for i, w := range want {
		if imp.Added[i] != w {
			t.Fatalf("added[%d] = %+v, want %+v", i, imp.Added[i], w)
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before[:bytes.LastIndexByte(before, ']')]) || !strings.Contains(string(after), "destructiveHint") {
		t.Fatalf("the file was rewritten, not added to:\n%s", after)
	}
	r, err := resolve.LoadRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	enabled := 0
	for _, tool := range r.Tools {
		if tool.Enabled {
			enabled++
		}
	}
	if len(r.Tools) != 4 || enabled != 2 {
		t.Fatalf("registry after import: %d tools, %d enabled; want 4, the 2 of before enabled", len(r.Tools), enabled)
	}

	// A second import adds nothing and writes nothing.
	imp, err = resolve.ImportConnection(context.Background(), f.host, path, "records")
	if err != nil || imp.Written || len(imp.Added) != 0 || len(imp.Kept) != 4 {
		t.Fatalf("second import: %+v %v", imp, err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, after) {
		t.Fatal("a second import changed the file")
	}

	// A connector the registry does not know is added, disabled.
	imp, err = resolve.ImportConnection(context.Background(), f.host, path, "memory")
	if err != nil || !imp.ConnectorAdded || len(imp.Added) != 4 {
		t.Fatalf("import of memory: %+v %v", imp, err)
	}
	if r, err = resolve.LoadRegistry(path); err != nil || r.Connectors["npm.server-memory"].Enabled || len(r.Tools) != 8 {
		t.Fatalf("registry after importing memory: %v", err)
	}

	// An unverified revision is refused; the file is left as it was.
	if _, err := connection.Add(context.Background(), f.host, connection.AddOptions{Name: "records", Connector: resolve.SandboxConnector, Config: cfg, Replace: true}, f.Change()); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(path)
	if _, err := resolve.ImportConnection(context.Background(), f.host, path, "records"); !hosttest.HasCode(t, err, blocking.RegistryImportUnverified) {
		t.Fatalf("import of an unverified connection: %v", err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, now) {
		t.Fatal("a refused import changed the file")
	}
}
