package resolve_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/projection"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// Benchmarks of issue 5's performance clause (docs/PERFORMANCE.md):
//
//	go test ./resolve -run '^$' -bench . -benchmem -count 5

// shape is how a synthetic host spreads its tools over connectors.
type shape struct {
	name string
	// connectors is the number of connectors; 0 gives every capability
	// its own.
	connectors int
	// exactCeiling lists every capability key in the package ceiling
	// instead of one "records.*" prefix.
	exactCeiling bool
}

var shapes = []shape{
	{name: "connector-per-capability"},
	{name: "10-connectors-exact-ceiling", connectors: 10, exactCeiling: true},
}

func digestOf(s string) string { return ir.DigestBytes([]byte(s)) }

// syntheticState builds, in memory, a State that resolves: n capabilities
// (read_only and consequential alternating, every third one asking for a
// person's approval), n registry capabilities and n enabled runtime tools,
// and n online, verified, enabled connections each listing its one tool.
func syntheticState(tb testing.TB, n int, sh shape) *resolve.State {
	tb.Helper()
	w := &ir.Worker{Protocol: "oa.worker/v1", Name: "bench", Version: "1.0.0", Ceiling: ir.Ceiling{MaxRisk: ir.Consequential}}
	reg := resolve.Registry{Host: hosttest.Name, Capabilities: map[string]resolve.RegistryCapability{}, Connectors: map[string]resolve.Connector{}}
	conns := make([]connection.Listed, 0, n)
	for i := range n {
		key := fmt.Sprintf("records.item%05d.read", i)
		risk, approval := ir.ReadOnly, ir.ApprovalNotRequired
		if i%2 == 1 {
			key, risk = fmt.Sprintf("records.item%05d.update", i), ir.Consequential
		}
		if i%3 == 0 {
			approval = ir.ApprovalRequired
		}
		w.Capabilities = append(w.Capabilities, ir.Capability{Key: key, Risk: risk, Approval: approval, Description: "Capability " + key + "."})
		reg.Capabilities[key] = resolve.RegistryCapability{Risk: risk, Description: "Capability " + key + ".", Approval: ir.ApprovalNotRequired}

		conn := fmt.Sprintf("bench.c%05d", i)
		if sh.connectors > 0 {
			conn = fmt.Sprintf("bench.c%05d", i%sh.connectors)
		}
		reg.Connectors[conn] = resolve.Connector{Aliases: []string{strings.ReplaceAll(conn, ".", "-")}, Availability: "available", Enabled: true}
		tool := fmt.Sprintf("tool_%05d", i)
		reg.Tools = append(reg.Tools, resolve.RuntimeTool{Name: tool, Connector: conn, Capability: key, Risk: risk, Enabled: true})

		readOnly, destructive, idempotent, openWorld := risk == ir.ReadOnly, risk == ir.Consequential, false, false
		t := connector.Tool{
			Name: tool, Description: "Tool " + tool + ".", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: connector.Annotations{ReadOnly: &readOnly, Destructive: &destructive, Idempotent: &idempotent, OpenWorld: &openWorld},
			Digest:      digestOf("tool " + tool),
		}
		name := fmt.Sprintf("conn-%05d", i)
		conns = append(conns, connection.Listed{Name: name, Seq: 2, Record: &connection.Record{
			Type: connection.RecordType, Host: hosttest.Name, Name: name, Seq: 2, Revision: 1, Connector: conn,
			Config: connector.Config{Command: "/usr/local/bin/bench-server", Args: []string{"--item", tool}}, Enabled: true, Online: true,
			Verification: &connection.Verification{Revision: 1, Inventory: connector.Inventory{Tools: []connector.Tool{t}, Digest: digestOf("inventory " + tool)}, VerifiedBy: "Bench Operator"},
		}})
	}
	w.Ceiling.Capabilities = []string{"records.*"}
	if sh.exactCeiling {
		w.Ceiling.Capabilities = ir.SortStrings(keysOf(reg.Capabilities))
	}
	r, err := resolve.NewRegistryForTest(reg)
	if err != nil {
		tb.Fatal(err)
	}
	return &resolve.State{
		Host: hosttest.Name, Worker: w,
		ArtifactDigest: digestOf("artifact"), WorkerIRDigest: digestOf("ir"), AdmissionDigest: digestOf("admission"), PolicyDigest: digestOf("policy"),
		Projection: &projection.Projection{Package: w.Name, Version: w.Version, PersonaDigest: digestOf("persona"), SkillDigest: digestOf("skill"), MaterializationDigest: digestOf("materialization")},
		Registry:   r, Connections: conns,
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

var benchRequest = resolve.Request{Deployment: "bench", Model: "claude-bench"}

// TestSyntheticStateResolves keeps the benchmark honest: every synthetic
// state resolves to a full plan, the same one twice.
func TestSyntheticStateResolves(t *testing.T) {
	for _, sh := range shapes {
		st := syntheticState(t, 100, sh)
		plan, err := resolve.Resolve(st, benchRequest)
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		if len(plan.Capabilities) != 100 {
			t.Fatalf("%s: %d entries", sh.name, len(plan.Capabilities))
		}
		again, err := resolve.Resolve(st, benchRequest)
		if err != nil || again.Digest() != plan.Digest() {
			t.Fatalf("%s: not deterministic: %v", sh.name, err)
		}
	}
}

// BenchmarkResolve is one resolution of an in-memory state and the plan's
// digest, for 100, 1,000 and 10,000 capabilities (each with its registry
// capability, runtime tool and connection).
func BenchmarkResolve(b *testing.B) {
	for _, sh := range shapes {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/N=%d", sh.name, n), func(b *testing.B) {
				st := syntheticState(b, n, sh)
				b.ReportAllocs()
				for b.Loop() {
					plan, err := resolve.Resolve(st, benchRequest)
					if err != nil {
						b.Fatal(err)
					}
					if len(plan.Digest()) != 71 {
						b.Fatal("bad digest")
					}
				}
			})
		}
	}
}

// recomputeHost is a real host (hosttest) whose admitted release has 100
// capabilities, performed by 50 sandbox connections to 50 connectors of a
// signed registry, two tools each.
type recomputeHost struct {
	host *host.Host
	art  *oci.Artifact
	// admission is the digest of the release's active admission record.
	admission string
}

const recomputeConnectors = 50

func newRecomputeHost(b *testing.B) *recomputeHost {
	b.Helper()
	ctx := context.Background()
	id := func(i int) (connectorID, name, read, write string) {
		if i == 0 {
			return resolve.SandboxConnector, "sandbox", "records.read", "records.note.append"
		}
		return fmt.Sprintf("sandbox.c%02d", i), fmt.Sprintf("sandbox-c%02d", i), fmt.Sprintf("records.c%02d.read", i), fmt.Sprintf("records.c%02d.append", i)
	}
	h := hosttest.New(b, func(dir string) {
		var src strings.Builder
		src.WriteString("package worker\n\ncapabilities: {\n")
		for i := 1; i < recomputeConnectors; i++ {
			_, _, read, write := id(i)
			fmt.Fprintf(&src, "\t%q: {description: \"Read record set %02d.\", risk: \"read_only\"}\n", read, i)
			fmt.Fprintf(&src, "\t%q: {description: \"Append to record set %02d.\", risk: \"consequential\", approval: \"required\"}\n", write, i)
		}
		src.WriteString("}\n")
		if err := os.WriteFile(filepath.Join(dir, "more_capabilities.cue"), []byte(src.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	})
	var reg strings.Builder
	fmt.Fprintf(&reg, "package host\n\nhost: %q\n\ncapabilities: {\n", hosttest.Name)
	for i := range recomputeConnectors {
		_, _, read, write := id(i)
		fmt.Fprintf(&reg, "\t%q: {risk: \"read_only\", description: \"Read.\"}\n\t%q: {risk: \"consequential\", description: \"Append.\"}\n", read, write)
	}
	reg.WriteString("}\n\nconnectors: {\n")
	for i := range recomputeConnectors {
		c, _, _, _ := id(i)
		fmt.Fprintf(&reg, "\t%q: {aliases: [%q], availability: \"available\"}\n", c, strings.ReplaceAll(c, ".", "-"))
	}
	reg.WriteString("}\n\ntools: [\n")
	for i := range recomputeConnectors {
		c, _, read, write := id(i)
		fmt.Fprintf(&reg, "\t{name: \"read_record\", connector: %q, capability: %q, risk: \"read_only\", enabled: true},\n", c, read)
		fmt.Fprintf(&reg, "\t{name: \"append_note\", connector: %q, capability: %q, risk: \"consequential\", enabled: true},\n", c, write)
	}
	reg.WriteString("]\n")
	h.WriteRegistry(reg.String())
	r := &recomputeHost{host: h.Open()}
	for i := range recomputeConnectors {
		c, name, _, _ := id(i)
		h.AddConnection(r.host, name, c, hosttest.Sandbox)
	}
	art, err := oci.Fetch(ctx, h.Release.Target, h.Release.Descriptor, schemas.CheckFetchedIR)
	if err != nil {
		b.Fatal(err)
	}
	status, err := admit.StatusOf(ctx, r.host, h.Release.Descriptor.Digest.String(), h.Now)
	if err != nil {
		b.Fatal(err)
	}
	r.art, r.admission = art, status.RecordDigest
	if n := len(art.Worker.Capabilities); n != 2*recomputeConnectors {
		b.Fatalf("release has %d capabilities", n)
	}
	return r
}

func (r *recomputeHost) load(b *testing.B) *resolve.State {
	st, err := resolve.LoadFor(context.Background(), r.host, r.art, r.admission)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkRecompute is the coordinator's check before an effect: the
// plan of an unchanged release of 100 capabilities, recomputed. Resolve is
// resolution and digest from loaded state; LoadFor reads the host state
// again (connections from SQLite with their signatures, registry file and
// signature, harness projection) with the host's signature memo warm; Full
// is both.
func BenchmarkRecompute(b *testing.B) {
	r := newRecomputeHost(b)
	st := r.load(b)
	want, err := resolve.Resolve(st, benchRequest)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Resolve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			plan, err := resolve.Resolve(st, benchRequest)
			if err != nil || plan.Digest() != want.Digest() {
				b.Fatal("plan changed", err)
			}
		}
	})
	b.Run("LoadFor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.load(b)
		}
	})
	b.Run("Full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			plan, err := resolve.Resolve(r.load(b), benchRequest)
			if err != nil || plan.Digest() != want.Digest() {
				b.Fatal("plan changed", err)
			}
		}
	})
}

// Every capability refused by one connection's ceiling check gets a
// refusal of its own, located at that capability.
func TestCeilingRefusalsPerCapability(t *testing.T) {
	st := syntheticState(t, 100, shapes[1])
	// conn-00000 performs all ten capabilities of connector bench.c00000;
	// the other nine connections to it are disabled.
	first := st.Connections[0].Record
	for i := 10; i < 100; i += 10 {
		rec := st.Connections[i].Record
		rec.Enabled = false
		first.Verification.Inventory.Tools = append(first.Verification.Inventory.Tools, rec.Verification.Inventory.Tools...)
	}
	outside := st.Worker.Capabilities[0].Key // served by connector bench.c00000
	st.Worker.Ceiling.Capabilities = slices.DeleteFunc(slices.Clone(st.Worker.Ceiling.Capabilities), func(k string) bool { return k == outside })
	_, err := resolve.Resolve(st, benchRequest)
	paths := map[string]bool{}
	for _, r := range blocking.Refusals(err) {
		if r.Code != blocking.ToolOutsideCeiling || !strings.Contains(r.Detail, outside) {
			t.Fatalf("unexpected refusal %v", r)
		}
		paths[r.Path] = true
	}
	if len(paths) != 10 { // the ten capabilities of connector bench.c00000
		t.Fatalf("refusals located at %d capabilities, want 10: %v", len(paths), err)
	}
}
