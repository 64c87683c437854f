package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/internal/stdioconn"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// Benchmarks of the coordinator rows of docs/PERFORMANCE.md ("Current figures").
// They assert results, never times.

// benchDeployment is a bound clinic deployment whose records connection
// runs cfg, opened as a coordinator.
type benchDeployment struct {
	*hosttest.Host
	cfg connector.Config
	c   *coordinator.Coordinator
}

func newBenchDeployment(b *testing.B, cfg connector.Config) *benchDeployment {
	b.Helper()
	d := &benchDeployment{Host: hosttest.New(b, nil), cfg: cfg}
	d.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := d.Open()
	d.AddConnection(host, "records", resolve.SandboxConnector, cfg)
	d.Bind(host, "claude-test")
	settleHostFiles()
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: d.Home, Deployment: "clinic", EffectTimeout: 30 * time.Second, Operator: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	d.c = c
	return d
}

// settleHostFiles waits until the host's policy and registry files,
// written a moment ago, are as still as a real host's: the plan check
// hashes a file changed within the last 2 s on every check (bind's
// fileDigests), which a host prepared just now would pay for the whole
// of a short benchmark.
func settleHostFiles() { time.Sleep(2100 * time.Millisecond) }

// client serves the coordinator over in-memory transports and returns a
// go-sdk client session on it, as an MCP client would hold one.
func (d *benchDeployment) client(b *testing.B) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The coordinator's side is the wire `oa coordinator serve` reads
	// stdin with; the client's is a line-buffered connection, as an
	// efficient agent's would be (the go-sdk's in-memory transport would
	// charge 32 KiB per message decoded to the benchmark's CPU).
	serverEnd, clientEnd := net.Pipe()
	st, ct := mcpserve.NewStdioTransport(serverEnd, serverEnd, nil), stdioconn.Over(clientEnd)
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, d.c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cancel()
		<-served
	})
	return cs
}

// direct opens the same downstream server as the coordinator's connection,
// with the same client oa uses (connector.Open).
func (d *benchDeployment) direct(b *testing.B) *connector.Session {
	b.Helper()
	s, err := connector.Open(context.Background(), d.cfg, connector.Options{SandboxDir: sandbox.Dir(d.Home)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// subprocessRecords is a real stdio MCP server (connectortest's test
// server) listing exactly the sandbox's two tools, schemas and
// annotations, and answering read_record with AB-1234 as the sandbox
// seeds it.
func subprocessRecords(b *testing.B) connector.Config {
	b.Helper()
	inv, err := connector.Probe(context.Background(), hosttest.Sandbox, connector.Options{})
	if err != nil {
		b.Fatal(err)
	}
	results := map[string]json.RawMessage{
		"read_record": json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`),
		"append_note": json.RawMessage(`{"saved":true,"note_id":"n-1"}`),
	}
	var tools []connectortest.ToolSpec
	for _, t := range inv.Tools {
		ann, err := json.Marshal(t.Annotations)
		if err != nil {
			b.Fatal(err)
		}
		tools = append(tools, connectortest.ToolSpec{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: ann, Result: results[t.Name]})
	}
	file := connectortest.WriteTools(b, b.TempDir(), tools)
	return connector.Config{Command: connectortest.Server(b), Args: []string{"--tools", file}, Confinement: connectortest.Allow(filepath.Dir(file))}
}

// remoteRecords serves the sandbox records server over MCP Streamable
// HTTP on a loopback port (the go-sdk's handler, in this process): a
// remote connection with the sandbox's exact tools.
func remoteRecords(b *testing.B) connector.Config {
	b.Helper()
	srv := sandbox.NewServer("")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(ts.Close)
	return connector.Config{Remote: &remote.Config{URL: ts.URL + "/mcp"}}
}

var readArgs = map[string]any{"record": "AB-1234"}

// BenchmarkRead: one read-only tool call (records_read of AB-1234) made
// by a go-sdk client through the coordinator's MCP server (in-memory
// transports; the coordinator makes the plan check, holds the session's
// tool list to the verified inventory, then calls), against the same call made by a go-sdk
// client session (connector.Open) directly to the same downstream server.
// The ratio is coordinator/direct.
func BenchmarkRead(b *testing.B) {
	downstreams := []struct {
		name string
		cfg  func(*testing.B) connector.Config
	}{
		{"sandbox", func(*testing.B) connector.Config { return hosttest.Sandbox }},
		{"subprocess", subprocessRecords},
		{"remote", remoteRecords},
	}
	for _, ds := range downstreams {
		b.Run(ds.name+"/coordinator", func(b *testing.B) {
			d := newBenchDeployment(b, ds.cfg(b))
			cs := d.client(b)
			ctx := context.Background()
			params := &mcp.CallToolParams{Name: "records_read", Arguments: readArgs}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					b.Fatalf("records_read: %v", err)
				}
				if res.IsError {
					b.Fatalf("records_read answered an error: %+v", res.Content)
				}
				var out struct {
					Outcome contract.Outcome `json:"outcome"`
					Content struct {
						Record string `json:"record"`
					} `json:"content"`
				}
				raw, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(raw, &out); err != nil {
					b.Fatalf("records_read answered %s: %v", raw, err)
				}
				if out.Outcome != contract.OutcomeDone {
					b.Fatalf("records_read: outcome %s, want %s: %s", out.Outcome, contract.OutcomeDone, raw)
				}
				if out.Content.Record != "AB-1234" {
					b.Fatalf("records_read: record %q, want AB-1234", out.Content.Record)
				}
			}
		})
		b.Run(ds.name+"/direct", func(b *testing.B) {
			d := newBenchDeployment(b, ds.cfg(b))
			s := d.direct(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Call(ctx, "read_record", readArgs)
				if err != nil {
					b.Fatalf("read_record: %v", err)
				}
				if res.IsError {
					b.Fatalf("read_record answered a tool error: %+v", res)
				}
				var out struct {
					Record string `json:"record"`
				}
				if err := json.Unmarshal(res.Structured, &out); err != nil {
					b.Fatalf("read_record answered %s: %v", res.Structured, err)
				}
				if out.Record != "AB-1234" {
					b.Fatalf("read_record: record %q, want AB-1234", out.Record)
				}
			}
		})
		// The floor of any coordinator that re-lists before each call:
		// the same client lists the tools (and checks them against the
		// verified inventory), then calls. No plan check, no MCP hop.
		b.Run(ds.name+"/direct-list-call", func(b *testing.B) {
			d := newBenchDeployment(b, ds.cfg(b))
			s := d.direct(b)
			ctx := context.Background()
			want, err := s.Inventory(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				inv, err := s.Inventory(ctx)
				if err != nil {
					b.Fatalf("tools/list: %v", err)
				}
				if inv.Digest != want.Digest {
					b.Fatalf("tools/list: inventory %s, want the verified %s", inv.Digest, want.Digest)
				}
				res, err := s.Call(ctx, "read_record", readArgs)
				if err != nil {
					b.Fatalf("read_record: %v", err)
				}
				if res.IsError {
					b.Fatalf("read_record answered a tool error: %+v", res)
				}
			}
		})
	}
}

// BenchmarkRunSandboxJob: one run of append_triage_note on AB-1234 through
// Coordinator.Run, each with a new request_id, to done (read, guard,
// effect, read back, receipt).
func BenchmarkRunSandboxJob(b *testing.B) {
	d := newBenchDeployment(b, hosttest.Sandbox)
	ctx := context.Background()
	in := inputs("AB-1234")
	i := 0
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		i++
		res, err := d.c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: fmt.Sprintf("bench-%d", i), Wait: time.Minute})
		if err != nil {
			b.Fatalf("run %d: %v", i, err)
		}
		wantResult(b, fmt.Sprintf("run %d", i), res, contract.OutcomeDone, contract.ReasonVerified)
		if res.ReceiptDigest == "" {
			b.Fatalf("run %d: no receipt digest", i)
		}
	}
	cpu.report(b)
}

// BenchmarkCheckPlan: the plan re-check alone, as made at the start of
// every run and before every step that reaches a downstream server. With
// no signed input changed it is answered from memory (bind.Checker).
func BenchmarkCheckPlan(b *testing.B) {
	d := newBenchDeployment(b, hosttest.Sandbox)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		plan, err := d.c.CheckPlan(ctx)
		if err != nil {
			b.Fatalf("check: %v", err)
		}
		if plan == nil {
			b.Fatal("check: no plan")
		}
	}
}

// BenchmarkConcurrentRuns50: fifty run_workflow calls at once on one MCP
// session (in-memory transports); an op is all fifty answered. Every
// result must be done, for its own request, with its own run and receipt.
func BenchmarkConcurrentRuns50(b *testing.B) { benchConcurrentRuns(b, 50) }

// BenchmarkConcurrentRuns32 is BenchmarkConcurrentRuns50 with 32 runs in
// flight, issue 26's figure: runs/s = 32 / (ns/op in seconds).
func BenchmarkConcurrentRuns32(b *testing.B) { benchConcurrentRuns(b, 32) }

func benchConcurrentRuns(b *testing.B, n int) {
	d := newBenchDeployment(b, hosttest.Sandbox)
	cs := d.client(b)
	ctx := context.Background()
	round := 0
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		round++
		results := make([]coordinator.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				id := fmt.Sprintf("c%d-%d", round, i)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
					"workflow": "append_triage_note", "request_id": id, "wait_seconds": 600,
					"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "routine", "summary": fmt.Sprintf("Concurrent note %s.", id)}}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error %v", res.Content)
				}
				if err != nil {
					errs[i] = err
					return
				}
				raw, _ := json.Marshal(res.StructuredContent)
				errs[i] = json.Unmarshal(raw, &results[i])
			})
		}
		wg.Wait()
		runs, receipts := map[string]bool{}, map[string]bool{}
		for i, res := range results {
			if errs[i] != nil {
				b.Fatalf("round %d call %d: %v", round, i, errs[i])
			}
			wantResult(b, fmt.Sprintf("round %d call %d", round, i), &res, contract.OutcomeDone, contract.ReasonVerified)
			if res.Replayed {
				b.Fatalf("round %d call %d: replayed, want a new run", round, i)
			}
			if want := fmt.Sprintf("c%d-%d", round, i); res.RequestID != want {
				b.Fatalf("round %d call %d: request %q, want %q", round, i, res.RequestID, want)
			}
			if res.Proof != contract.ProofSealed {
				b.Fatalf("round %d call %d: proof %s, want %s", round, i, res.Proof, contract.ProofSealed)
			}
			runs[res.RunID], receipts[res.ReceiptDigest] = true, true
		}
		if len(runs) != n {
			b.Fatalf("round %d: %d distinct runs for %d calls", round, len(runs), n)
		}
		if len(receipts) != n {
			b.Fatalf("round %d: %d distinct receipts for %d calls", round, len(receipts), n)
		}
	}
	cpu.report(b)
}
