package telemetry_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/telemetry"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// receiver is an OTLP/HTTP collector in the test: it keeps every request
// as sent (the raw protobuf) and decoded with the OTLP protobuf types.
type receiver struct {
	mu      sync.Mutex
	raw     [][]byte
	spans   []*tracepb.Span
	metrics []*colmetricpb.ExportMetricsServiceRequest
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, "gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw = append(r.raw, b)
	w.Header().Set("Content-Type", "application/x-protobuf")
	switch req.URL.Path {
	case "/v1/traces":
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, "decode", http.StatusBadRequest)
			return
		}
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	case "/v1/metrics":
		var m colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, "decode", http.StatusBadRequest)
			return
		}
		r.metrics = append(r.metrics, &m)
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Write(out)
	default:
		http.NotFound(w, req)
	}
}

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
	// Planted values: none may appear in anything exported.
	plantedInput  = "Planted-Summary-Kx93-cough"
	plantedRecord = "AB-1234"
	plantedState  = "plantedtracestatevalue9q"
	plantedSecret = "sk_live_Planted_7Hq2"
)

// TestCoordinatorExportsOTLP serves a bound deployment over MCP with the
// OTEL_* variables pointing at a receiver in the test, runs the workflow
// with a traceparent in the request's _meta, ends the session and decodes
// what arrived: the span tree under the client's span, the metrics, and
// not one planted input value, record, tracestate, path or secret.
func TestCoordinatorExportsOTLP(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "oa-under-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	t.Setenv("OA_PLANTED_SECRET", plantedSecret)

	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	hh := h.Open()
	h.AddConnection(hh, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(hh, "claude-test")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: "test"})
	if err != nil || tel == nil {
		t.Fatalf("setup: %v", err)
	}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: io.Discard, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(requestID, record string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01", "tracestate": "vendor=" + plantedState},
			Name: contract.ToolRunWorkflow,
			Arguments: map[string]any{"workflow": "append_triage_note", "request_id": requestID,
				"inputs": map[string]any{"record_ref": record, "urgency": "routine", "summary": plantedInput + " " + plantedSecret}},
		})
		if err != nil || res.IsError {
			t.Fatalf("run_workflow: %v %+v", err, res)
		}
	}
	call("otel-1", plantedRecord)
	call("otel-2", "OF-0001") // the sandbox's offline record: did_not_run
	// A refusal: a run this deployment does not have.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolGetRun, Arguments: map[string]any{"run_id": "run_" + plantedRecord}})
	if err != nil || !res.IsError {
		t.Fatalf("unknown run: %v %+v", err, res)
	}
	cs.Close()
	<-served
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	byName := map[string][]*tracepb.Span{}
	for _, s := range rcv.spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		byName[s.Name] = append(byName[s.Name], s)
	}
	for _, name := range []string{"oa.session", "oa.run", "oa.step.read", "oa.step.guard", "oa.step.effect", "oa.step.check", "oa.plan_check", "oa.receipt.seal"} {
		if len(byName[name]) == 0 {
			t.Errorf("no %s span; spans: %v", name, names(rcv.spans))
		}
	}
	var calls []*tracepb.Span
	for name, ss := range byName {
		if strings.HasPrefix(name, "tools/call ") {
			calls = append(calls, ss...)
		}
	}
	if len(calls) == 0 {
		t.Fatalf("no downstream call span; spans: %v", names(rcv.spans))
	}
	// The client's traceparent is every run's parent; steps, plan checks
	// and seals hang under the run; calls under a step.
	t.Logf("%d spans: %v", len(rcv.spans), names(rcv.spans))
	runs := byName["oa.run"]
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2", len(runs))
	}
	for _, r := range runs {
		if hex.EncodeToString(r.TraceId) != clientTrace || hex.EncodeToString(r.ParentSpanId) != clientSpan {
			t.Errorf("run span trace %x parent %x, want the client's %s/%s", r.TraceId, r.ParentSpanId, clientTrace, clientSpan)
		}
		if r.TraceState != "" {
			t.Errorf("the client's tracestate was kept: %q", r.TraceState)
		}
	}
	rootOf := func(s *tracepb.Span) *tracepb.Span {
		for p := byID[hex.EncodeToString(s.ParentSpanId)]; p != nil; p = byID[hex.EncodeToString(p.ParentSpanId)] {
			if p.Name == "oa.run" {
				return p
			}
		}
		return nil
	}
	for _, name := range []string{"oa.step.read", "oa.step.guard", "oa.step.effect", "oa.step.check", "oa.receipt.seal"} {
		for _, s := range byName[name] {
			if p := byID[hex.EncodeToString(s.ParentSpanId)]; p == nil || p.Name != "oa.run" {
				t.Errorf("%s's parent is not a run span", name)
			}
		}
	}
	for _, s := range calls {
		p := byID[hex.EncodeToString(s.ParentSpanId)]
		if p == nil || !strings.HasPrefix(p.Name, "oa.step.") || rootOf(s) == nil || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("call span %s is not a client span under a step of a run", s.Name)
		}
	}
	outcomes := map[string]bool{}
	for _, r := range runs {
		for _, a := range r.Attributes {
			if a.Key == "oa.outcome" {
				outcomes[a.Value.GetStringValue()] = true
			}
		}
	}
	if !outcomes["done"] || !outcomes["did_not_run"] {
		t.Errorf("run outcomes %v, want done and did_not_run", outcomes)
	}

	// Metrics: runs by outcome and reason, refusals by code, both
	// latency histograms, runs in flight.
	seen := map[string]bool{}
	var refusalCodes []string
	for _, m := range rcv.metrics {
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, met := range sm.Metrics {
					seen[met.Name] = true
					if met.Name == "oa.refusals" {
						for _, dp := range met.GetSum().GetDataPoints() {
							for _, a := range dp.Attributes {
								refusalCodes = append(refusalCodes, a.Value.GetStringValue())
							}
						}
					}
					if met.Name == "oa.step.duration" || met.Name == "oa.downstream.duration" {
						if len(met.GetHistogram().GetDataPoints()) == 0 {
							t.Errorf("%s has no histogram points", met.Name)
						}
					}
				}
			}
		}
	}
	for _, name := range []string{"oa.runs", "oa.refusals", "oa.step.duration", "oa.downstream.duration", "oa.runs.in_flight"} {
		if !seen[name] {
			t.Errorf("no %s metric; got %v", name, seen)
		}
	}
	if strings.Join(refusalCodes, ",") != string(blocking.RunUnknown) {
		t.Errorf("refusal codes %v, want %s", refusalCodes, blocking.RunUnknown)
	}

	// Nothing planted, no path and no secret went out, in any request.
	all := bytes.Join(rcv.raw, nil)
	for _, leak := range []string{plantedInput, "Kx93", plantedRecord, plantedState, plantedSecret, h.Home, "cough", "urgency", "routine"} {
		if bytes.Contains(all, []byte(leak)) {
			t.Errorf("exported telemetry carries %q", leak)
		}
	}
	if !bytes.Contains(all, []byte("oa-under-test")) || !bytes.Contains(all, []byte("deployment.environment")) {
		t.Error("OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES not in the resource")
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestUnsetExportsNothing: without an endpoint nothing is set up; a bad
// protocol is refused with telemetry_config_invalid.
func TestUnsetExportsNothing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{})
	if tel != nil || err != nil || telemetry.Active() {
		t.Fatalf("unset: %v %v", tel, err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}
	if telemetry.Enabled(func(k string) string { return env[k] }) {
		t.Fatal("OTEL_SDK_DISABLED=true is not honoured")
	}
	env = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
	_, err = telemetry.Setup(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }})
	if rs := blocking.Refusals(err); len(rs) != 1 || rs[0].Code != blocking.TelemetryConfigInvalid {
		t.Fatalf("bad protocol: %v", err)
	}
}

// TestFromMetaKeepsOnlyTheTrace: a traceparent becomes the remote parent,
// its tracestate is dropped, and anything else is ignored.
func TestFromMetaKeepsOnlyTheTrace(t *testing.T) {
	ctx := telemetry.FromMeta(context.Background(), map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01", "tracestate": "v=" + plantedState})
	meta := telemetry.ToMeta(ctx, nil)
	b, _ := json.Marshal(meta)
	if !strings.Contains(string(b), clientTrace) || strings.Contains(string(b), plantedState) {
		t.Fatalf("downstream meta %s", b)
	}
	for _, bad := range []map[string]any{nil, {"traceparent": 42}, {"traceparent": "00-zz-yy-01"}, {"traceparent": "00-00000000000000000000000000000000-" + clientSpan + "-01"}} {
		if m := telemetry.ToMeta(telemetry.FromMeta(context.Background(), bad), nil); m != nil {
			t.Fatalf("%v gave a trace context: %v", bad, m)
		}
	}
}

// grpcTraces is an OTLP/gRPC trace collector in the test.
type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (g *grpcTraces) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestGRPCProtocol: OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over OTLP/gRPC.
func TestGRPCProtocol(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	traces := &grpcTraces{}
	coltracepb.RegisterTraceServiceServer(gs, traces)
	go gs.Serve(lis)
	defer gs.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{})
	if err != nil || tel == nil {
		t.Fatalf("setup: %v", err)
	}
	_, span := telemetry.StartSession(ctx, "clinic", "sha256:00")
	span.End("")
	// The metric exporter has no collector here: Shutdown says so, bounded.
	_ = tel.Shutdown(ctx)
	traces.mu.Lock()
	defer traces.mu.Unlock()
	if strings.Join(traces.names, ",") != telemetry.SpanSession {
		t.Fatalf("spans over gRPC: %v", traces.names)
	}
}

// TestFullQueueDropsAndCounts: with the collector stuck, spans past the
// queue bound are dropped and counted (oa.telemetry.spans.dropped), never
// waited for; every span is either exported or counted.
func TestFullQueueDropsAndCounts(t *testing.T) {
	gate := make(chan struct{})
	rcv := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			<-gate
		}
		rcv.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for range n {
		_, span := telemetry.StartSession(ctx, "clinic", "sha256:00")
		span.End("")
	}
	close(gate)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var dropped int64
	for _, m := range rcv.metrics {
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, met := range sm.Metrics {
					if met.Name == "oa.telemetry.spans.dropped" {
						for _, dp := range met.GetSum().GetDataPoints() {
							dropped += dp.GetAsInt()
						}
					}
				}
			}
		}
	}
	if dropped == 0 || int64(len(rcv.spans))+dropped != n {
		t.Fatalf("exported %d, dropped %d, want some dropped and %d in all", len(rcv.spans), dropped, n)
	}
}

// TestTextAnswerNeverExported (issue 39): a governed read of a tool that
// answers in text only forwards the text to the agent, and a workflow
// whose steps use the text (answer: text, steps.X.text and .json)
// decides on it; with telemetry on, the text is in no exported span,
// attribute or metric, nor is the host's path.
func TestTextAnswerNeverExported(t *testing.T) {
	const plantedText = "Planted-Text-Answer-Zq71"
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	h := hosttest.New(t, func(dir string) {
		p := filepath.Join(dir, "jobs.cue")
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		s := strings.NewReplacer(
			`capability: "records.read", args: "record_lookup"},`, `capability: "records.read", args: "record_lookup", answer: "text"},`,
			`evidence: "note_saved"}`, `evidence: "note_saved", answer: "text"}`,
			`expr: "steps.load_record.status == \"open\""`, `expr: "(*steps.load_record.json.status | \"\") == \"open\""`,
			`for n in result.notes if`, `for n in result.json.notes if`,
		).Replace(string(b))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			panic(err)
		}
	})
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	hh := h.Open()
	content, _ := json.Marshal([]map[string]any{{"type": "text", "text": `{"status": "open", "said": "` + plantedText + `", "notes": [{"text": "[triage:routine] A note."}]}`}})
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Content: content},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
	})
	h.AddConnection(hh, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: connectortest.Allow(filepath.Dir(tools))})
	h.Bind(hh, "claude-test")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: "test"})
	if err != nil || tel == nil {
		t.Fatalf("setup: %v", err)
	}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: io.Discard, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- mcpserve.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-text", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	read, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
	if b, _ := json.Marshal(read); err != nil || read.IsError || !bytes.Contains(b, []byte(plantedText)) {
		t.Fatalf("the governed read did not give the agent the text: %v %s", err, b)
	}
	run, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "request_id": "otel-text-1",
		"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "routine", "summary": "A note."}}})
	if b, _ := json.Marshal(run.StructuredContent); err != nil || !bytes.Contains(b, []byte(`"reason":"verified"`)) {
		t.Fatalf("the workflow did not decide on the text: %v %s", err, b)
	}
	cs.Close()
	<-served
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) == 0 {
		t.Fatal("nothing exported")
	}
	all := bytes.Join(rcv.raw, nil)
	for _, leak := range []string{plantedText, "Zq71", "said", h.Home} {
		if bytes.Contains(all, []byte(leak)) {
			t.Errorf("exported telemetry carries %q", leak)
		}
	}
}
