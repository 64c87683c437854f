package resolve_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// fixture is a host with the clinic release admitted, a signed registry
// and (unless asked otherwise) one verified sandbox connection.
type fixture struct {
	*hosttest.Host
	host *host.Host
}

func newFixture(t *testing.T, registry string) *fixture {
	t.Helper()
	f := &fixture{Host: hosttest.New(t, nil)}
	f.WriteRegistry(registry)
	f.host = f.Open()
	return f
}

func starter() string { return resolve.StarterRegistry(hosttest.Name) }

var sandboxConfig = hosttest.Sandbox

func (f *fixture) change() connection.Change { return f.Change() }

func (f *fixture) addVerified(name, connectorID string, cfg connector.Config) {
	f.T.Helper()
	f.AddConnection(f.host, name, connectorID, cfg)
}

func (f *fixture) compute(probe bool) (*resolve.Plan, error) {
	return f.Plan(f.host, "claude-test", probe)
}

func codes(t *testing.T, err error) []blocking.Code { return hosttest.Codes(t, err) }

func contains(codes []blocking.Code, want blocking.Code) bool { return slices.Contains(codes, want) }

func TestResolveSandboxPlan(t *testing.T) {
	f := newFixture(t, starter())
	f.addVerified("sandbox", resolve.SandboxConnector, sandboxConfig)
	plan, err := f.compute(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Capabilities) != 2 {
		t.Fatalf("plan has %d entries", len(plan.Capabilities))
	}
	read, _ := plan.Entry("records.read")
	write, _ := plan.Entry("records.note.append")
	if read.RuntimeTool != "read_record" || read.Risk != ir.ReadOnly || read.ConnectionID != "sandbox" || read.ConnectionRevision != 1 || read.AuthorityDigest == "" || read.ToolSchemaDigest == "" {
		t.Fatalf("read entry = %+v", read)
	}
	if write.RuntimeTool != "append_note" || write.Risk != ir.Consequential || write.Approval != ir.ApprovalNotRequired {
		t.Fatalf("write entry = %+v", write)
	}
	if got := plan.Consequential(); len(got) != 1 || got[0] != "records.note.append" {
		t.Fatalf("consequential = %v", got)
	}
	for _, d := range []string{plan.ArtifactDigest, plan.WorkerIRDigest, plan.AdmissionDigest, plan.PolicyDigest, plan.PersonaDigest, plan.SkillDigest, plan.MaterializationDigest} {
		if !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
			t.Fatalf("chain digest %q in %+v", d, plan)
		}
	}
	if plan.Type != resolve.PlanType || plan.RegistryDigest != "" || len(plan.RegistryEntries) != 5 {
		t.Fatalf("the plan's registry link: %s %q %+v", plan.Type, plan.RegistryDigest, plan.RegistryEntries)
	}
	// Same state, same digest: in a freshly opened host too.
	again, err := f.compute(false)
	if err != nil || again.Digest() != plan.Digest() {
		t.Fatalf("recomputed %v, %v; want %s", again, err, plan.Digest())
	}
	f.host = f.Open()
	if again, err := f.compute(true); err != nil || again.Digest() != plan.Digest() {
		t.Fatalf("another handle computed a different plan: %v", err)
	}
}

func TestHostApprovalOnlyAdds(t *testing.T) {
	f := newFixture(t, strings.Replace(starter(), `description: "Append one note to a record."`, `description: "Append one note to a record."
		approval: "required"`, 1))
	f.addVerified("sandbox", resolve.SandboxConnector, sandboxConfig)
	plan, err := f.compute(false)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := plan.Entry("records.note.append"); e.Approval != ir.ApprovalRequired {
		t.Fatalf("host-required approval dropped: %+v", e)
	}
}

// TestResolutionProofs refuses each of the nine proofs (the eighth, a
// person's approval, is refused by bind) with its own code.
func TestResolutionProofs(t *testing.T) {
	extraTool := func(line string) func(string) string {
		return func(s string) string { return strings.Replace(s, "tools: [\n", "tools: [\n\t"+line+"\n", 1) }
	}
	cases := []struct {
		name     string
		registry func(string) string
		setup    func(f *fixture)
		want     blocking.Code
	}{
		{"1 capability not in registry", func(s string) string {
			s = strings.Replace(s, `"records.read": {`, `"records.lookup": {`, 1)
			return strings.Replace(s, `capability: "records.read"`, `capability: "records.lookup"`, 1)
		}, nil, blocking.CapabilityNotInRegistry},
		{"2 runtime tool names an alias", func(s string) string {
			return strings.Replace(s, `{name: "read_record", connector: "sandbox.records"`, `{name: "read_record", connector: "records-sandbox"`, 1)
		}, nil, blocking.ConnectorNotCanonical},
		{"2 connection names an alias", nil, func(f *fixture) {
			f.addVerified("alias", "records-sandbox", sandboxConfig)
		}, blocking.ConnectorNotCanonical},
		{"3 connector unavailable", func(s string) string {
			return strings.Replace(s, `availability: "available"`, `availability: "unavailable"`, 1)
		}, nil, blocking.ConnectorUnavailable},
		{"3 connector not connected", nil, func(f *fixture) {
			if _, err := connection.SetEnabled(context.Background(), f.host, "sandbox", false, f.change()); err != nil {
				f.T.Fatal(err)
			}
		}, blocking.ConnectorUnavailable},
		{"4 no enabled runtime tool", func(s string) string {
			return strings.Replace(s, `capability: "records.read", risk: "read_only", enabled: true`, `capability: "records.read", risk: "read_only", enabled: false`, 1)
		}, nil, blocking.RuntimeToolMissing},
		{"4 two enabled runtime tools", extraTool(`{name: "read_record_v2", connector: "sandbox.records", capability: "records.read", risk: "read_only", enabled: true},`), nil, blocking.RuntimeToolAmbiguous},
		{"5 two connections can perform it", nil, func(f *fixture) {
			f.addVerified("sandbox-two", resolve.SandboxConnector, sandboxConfig)
		}, blocking.ConnectionAmbiguous},
		{"5 no connection lists the tool", func(s string) string {
			return strings.Replace(s, `{name: "read_record",`, `{name: "read_records",`, 1)
		}, nil, blocking.ConnectionMissing},
		{"6 revision never verified", nil, func(f *fixture) {
			if _, err := connection.Add(context.Background(), f.host, connection.AddOptions{Name: "sandbox", Connector: resolve.SandboxConnector, Config: connector.Config{Command: connector.SandboxCommand, Args: []string{"--v2"}}, Replace: true}, f.change()); err != nil {
				f.T.Fatal(err)
			}
		}, blocking.ConnectionRevisionChanged},
		{"7 registry and package disagree on risk", func(s string) string {
			s = strings.Replace(s, `risk:        "read_only"`, `risk:        "consequential"`, 1)
			return s
		}, nil, blocking.RiskMismatch},
		{"7 runtime tool and package disagree on risk", func(s string) string {
			return strings.Replace(s, `capability: "records.note.append", risk: "consequential"`, `capability: "records.note.append", risk: "read_only"`, 1)
		}, nil, blocking.RiskMismatch},
		{"9 enabled connector tool outside the ceiling", func(s string) string {
			s = strings.Replace(s, "capabilities: {\n", "capabilities: {\n\t\"mail.send\": {risk: \"consequential\", description: \"Send mail.\"}\n", 1)
			return extraTool(`{name: "send_mail", connector: "sandbox.records", capability: "mail.send", risk: "consequential", enabled: true},`)(s)
		}, nil, blocking.ToolOutsideCeiling},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := starter()
			if c.registry != nil {
				reg = c.registry(reg)
			}
			f := newFixture(t, reg)
			f.addVerified("sandbox", resolve.SandboxConnector, sandboxConfig)
			if c.setup != nil {
				c.setup(f)
			}
			plan, err := f.compute(false)
			got := codes(t, err)
			if plan != nil || len(got) == 0 || !contains(got, c.want) {
				t.Fatalf("codes = %v, want %s (plan %v)", got, c.want, plan != nil)
			}
			for _, r := range blocking.Refusals(err) {
				if !strings.HasPrefix(r.Path, "capabilities.records.") {
					t.Fatalf("refusal %s does not name the capability: path %q", r.Code, r.Path)
				}
			}
		})
	}
}

// A real MCP subprocess: its readOnlyHint is checked against the package,
// an unregistered tool it exposes is outside the ceiling, and a live
// schema change is drift.
func TestSubprocessConnection(t *testing.T) {
	server := connectortest.Server(t)
	readSchema := json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"}},"required":["record"]}`)
	tools := []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", InputSchema: readSchema, Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
	}
	setup := func(t *testing.T, tools []connectortest.ToolSpec) (*fixture, string) {
		f := newFixture(t, starter())
		toolsFile := filepath.Join(t.TempDir(), "tools.json")
		if err := os.Rename(connectortest.WriteTools(t, t.TempDir(), tools), toolsFile); err != nil {
			t.Fatal(err)
		}
		f.addVerified("records", resolve.SandboxConnector, connector.Config{Command: server, Args: []string{"--tools", toolsFile}, Confinement: connectortest.Allow(filepath.Dir(toolsFile))})
		return f, toolsFile
	}
	t.Run("plan and drift", func(t *testing.T) {
		f, toolsFile := setup(t, tools)
		plan, err := f.compute(true)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := plan.Entry("records.read"); e.ConnectionID != "records" {
			t.Fatalf("entry %+v", e)
		}
		changed := append([]connectortest.ToolSpec{}, tools...)
		changed[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string","maxLength":7}}}`)
		if err := os.Rename(connectortest.WriteTools(t, t.TempDir(), changed), toolsFile); err != nil {
			t.Fatal(err)
		}
		if _, err := f.compute(false); err != nil {
			t.Fatalf("without a probe the recorded inventory still resolves: %v", err)
		}
		if _, err := f.compute(true); !contains(codes(t, err), blocking.ConnectionInventoryChanged) {
			t.Fatalf("live schema change: %v", err)
		}
		if _, err := connection.Verify(context.Background(), f.host, "records", connector.Options{}, f.change()); err != nil {
			t.Fatal(err)
		}
		again, err := f.compute(true)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := again.Entry("records.read"); e.ConnectionRevision != 2 || again.Digest() == plan.Digest() {
			t.Fatalf("re-verified inventory: revision %d, digest changed %v", e.ConnectionRevision, again.Digest() != plan.Digest())
		}
	})
	t.Run("7 readOnlyHint disagrees", func(t *testing.T) {
		bad := append([]connectortest.ToolSpec{}, tools...)
		bad[0].Annotations = json.RawMessage(`{"readOnlyHint":false}`)
		f, _ := setup(t, bad)
		if _, err := f.compute(false); !contains(codes(t, err), blocking.RiskMismatch) {
			t.Fatalf("readOnlyHint false on a read: %v", err)
		}
	})
	t.Run("9 unregistered tool exposed", func(t *testing.T) {
		more := append(append([]connectortest.ToolSpec{}, tools...), connectortest.ToolSpec{Name: "delete_record", Description: "Delete a record."})
		f, _ := setup(t, more)
		_, err := f.compute(false)
		if !contains(codes(t, err), blocking.ToolOutsideCeiling) || strings.Contains(err.Error(), "delete_record") {
			t.Fatalf("unregistered tool: %v", err)
		}
	})
}

func TestRegistryAndAdmissionMustHold(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, starter())
	f.addVerified("sandbox", resolve.SandboxConnector, sandboxConfig)
	regFile := filepath.Join(f.Home, resolve.RegistryFile)
	if err := os.WriteFile(regFile, []byte(strings.Replace(starter(), "Read one record", "Read any record", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.compute(false); !contains(codes(t, err), blocking.RegistrySignatureBroken) {
		t.Fatalf("edited registry: %v", err)
	}
	if _, err := host.Open(ctx, f.Home); err != nil {
		t.Fatal(err)
	}
	// A host with no registry signature at all.
	g := &fixture{Host: hosttest.New(t, nil)}
	g.host = g.Open()
	if err := os.WriteFile(filepath.Join(g.Home, resolve.RegistryFile), []byte(starter()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.compute(false); !contains(codes(t, err), blocking.RegistryUnsigned) {
		t.Fatalf("unsigned registry: %v", err)
	}
	// A revoked release resolves to nothing.
	f.WriteRegistry(starter())
	if _, err := f.compute(false); err != nil {
		t.Fatal(err)
	}
	if _, err := admit.Revoke(ctx, f.host, f.Release.Descriptor.Digest.String(), "test", "Test Operator", f.Now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.compute(false); !contains(codes(t, err), blocking.AdmissionNotActive) {
		t.Fatalf("revoked release: %v", err)
	}
}

func TestRegistryRefusals(t *testing.T) {
	cases := map[string]string{
		"alias equals a canonical id": strings.Replace(starter(), `aliases: ["records-sandbox"]`, `aliases: ["sandbox.records"]`, 1),
		"tool listed twice":           strings.Replace(starter(), "tools: [\n", "tools: [\n\t{name: \"read_record\", connector: \"sandbox.records\", capability: \"records.read\", risk: \"read_only\", enabled: false},\n", 1),
		"bad risk":                    strings.Replace(starter(), `risk:        "read_only"`, `risk:        "harmless"`, 1),
		"unknown field":               starter() + "\nextra: 1\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "registry.cue")
			os.WriteFile(path, []byte(src), 0o644)
			_, err := resolve.LoadRegistry(path)
			l := blocking.Refusals(err)
			located := false
			for _, r := range l {
				located = located || (r.Code == blocking.RegistryInvalid && strings.HasPrefix(r.Pos, path+":"))
			}
			if !located {
				t.Fatalf("LoadRegistry = %v, want a located registry_invalid", err)
			}
		})
	}
}
