package connector_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// textTools are a text-only server's tools: one answering text (with a
// resource link and an image), one answering more text than the bound,
// and one with an output schema, whose content is not kept.
func textTools() []connectortest.ToolSpec {
	big := strings.Repeat("é", connector.MaxContentBytes) // twice the bound in bytes
	bigJSON, _ := json.Marshal([]map[string]any{{"type": "text", "text": "first"}, {"type": "text", "text": big}, {"type": "text", "text": "never"}})
	return []connectortest.ToolSpec{
		{Name: "say", Description: "Say where.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Content: json.RawMessage(`[{"type":"text","text":"Ada is in ward B-4."},{"type":"resource_link","uri":"file:///wards/b4","name":"b4"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]`)},
		{Name: "long", Description: "Say much.", Annotations: json.RawMessage(`{"readOnlyHint":true}`), Content: bigJSON},
		{Name: "typed", Description: "Say typed.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"}},"required":["ward"]}`),
			Result:       json.RawMessage(`{"ward":"B-4"}`)},
	}
}

// TestTextOnlyAnswerKept: a tool without an output schema that answers
// with content and no structured content keeps its blocks as the server
// sent them (text, resource link, image); an answer over the bound keeps
// what fits, cut at a character, and says it was cut; a tool with an
// output schema keeps its checked structured content and no blocks.
func TestTextOnlyAnswerKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := connector.Open(ctx, serverConfig(t, textTools()), connector.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	res, err := s.Call(ctx, "say", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"Ada is in ward B-4."},{"type":"resource_link","uri":"file:///wards/b4","name":"b4"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]`
	if res.Structured != nil || res.ContentCut || string(res.Content) != want {
		t.Fatalf("text-only answer kept as %s (cut %v, structured %s), want %s", res.Content, res.ContentCut, res.Structured, want)
	}
	if text, ok := res.Text(); !ok || text != "Ada is in ward B-4." {
		t.Fatalf("Text() = %q %v", text, ok)
	}

	res, err = s.Call(ctx, "long", nil)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []struct{ Text string }
	if err := json.Unmarshal(res.Content, &blocks); err != nil {
		t.Fatal(err)
	}
	if !res.ContentCut || len(res.Content) > connector.MaxContentBytes || len(blocks) != 2 || blocks[0].Text != "first" ||
		!strings.HasPrefix(strings.Repeat("é", connector.MaxContentBytes), blocks[1].Text) || len(blocks[1].Text) < connector.MaxContentBytes/2-64 {
		t.Fatalf("a long answer: cut %v, %d bytes, %d blocks", res.ContentCut, len(res.Content), len(blocks))
	}

	res, err = s.Call(ctx, "typed", nil)
	if err != nil || string(res.Structured) != `{"ward":"B-4"}` || res.Content != nil {
		t.Fatalf("a tool with an output schema: %v %s %s", err, res.Structured, res.Content)
	}
}
