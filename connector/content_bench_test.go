package connector_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// BenchmarkReadAnswer: a call of a real subprocess server (the test
// server over stdio) whose answer is the same ~1 KiB record, as
// structured content checked against an output schema ("structured") or
// as one text block of a tool without one, kept bounded for the agent
// ("text"). A text answer must cost no more than a structured one.
func BenchmarkReadAnswer(b *testing.B) {
	record := map[string]any{"record": "AB-1234", "status": "open", "notes": []any{map[string]any{"id": "n1", "text": strings.Repeat("Seen in ward B-4. ", 50)}}}
	structured, _ := json.Marshal(record)
	text, _ := json.Marshal([]map[string]any{{"type": "text", "text": string(structured)}})
	tools := []connectortest.ToolSpec{
		{Name: "structured", Description: "Read typed.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Result: structured,
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"},"status":{"type":"string"},"notes":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"text":{"type":"string"}}}}},"required":["record","status"]}`)},
		{Name: "text", Description: "Read text.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Content: text},
	}
	file := connectortest.WriteTools(b, b.TempDir(), tools)
	cfg := connector.Config{Command: connectortest.Server(b), Args: []string{"--tools", file}, Confinement: connectortest.Allow(filepath.Dir(file))}
	ctx := context.Background()
	s, err := connector.Open(ctx, cfg, connector.Options{Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Inventory(ctx); err != nil {
		b.Fatal(err)
	}
	for _, tool := range []string{"structured", "text"} {
		b.Run(tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Call(ctx, tool, nil)
				if err != nil || (res.Structured == nil && res.Content == nil) {
					b.Fatal(err)
				}
			}
		})
	}
}
