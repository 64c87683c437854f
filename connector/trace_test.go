package connector_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/oa-dev/oa/connector"
)

// TestCallPassesTraceContextDownstream: a call made under a span sends
// that trace (W3C traceparent) to the downstream server in the request's
// _meta; without one it sends none.
func TestCallPassesTraceContextDownstream(t *testing.T) {
	metaFile := filepath.Join(t.TempDir(), "meta.jsonl")
	cfg := serverConfig(t, baseTools(), "--meta-file", metaFile)
	s, err := connector.Open(context.Background(), cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if _, err := s.Call(ctx, "lookup", map[string]any{"id": "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "lookup", map[string]any{"id": "b"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(metaFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("meta lines: %q", lines)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	tp, _ := first["traceparent"].(string)
	if !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || !strings.HasSuffix(tp, "-01") {
		t.Fatalf("traceparent %q does not carry the caller's trace", tp)
	}
	if lines[1] != "null" && lines[1] != "{}" {
		t.Fatalf("a call without a trace sent _meta %s", lines[1])
	}
}
