package connector_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/internal/testkit/interoptest"
)

// TestElicitationServerEverything: the stock server-everything's
// trigger-elicitation-request (listed because oa's client offers
// elicitation) asks during a call; the Elicitor of that call is asked with
// the server's form, and accept, decline and cancel each complete the
// call. A call without an Elicitor is answered cancel and completes too.
func TestElicitationServerEverything(t *testing.T) {
	srv := interoptest.StartEverything(t)
	ctx := context.Background()
	s, err := connector.Open(ctx, connector.Config{Remote: &connector.Remote{URL: srv.URL}}, connector.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Inventory(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action  string
		content map[string]any
	}{
		{"accept", map[string]any{"name": "Ada Lovelace", "check": true}},
		{"decline", nil},
		{"cancel", nil},
	} {
		asked := 0
		elicitor := func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked++
			schema, _ := json.Marshal(p.RequestedSchema)
			var form struct {
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(schema, &form); err != nil || len(form.Required) != 1 || form.Required[0] != "name" || p.Message == "" {
				t.Errorf("%s: the form reached the elicitor changed: %s", tc.action, schema)
			}
			return &mcp.ElicitResult{Action: tc.action, Content: tc.content}, nil
		}
		res, err := s.Call(connector.WithElicitor(ctx, elicitor), "trigger-elicitation-request", map[string]any{})
		if err != nil || res.IsError || asked != 1 {
			t.Fatalf("%s: %v %+v, asked %d times", tc.action, err, res, asked)
		}
	}
	if res, err := s.Call(ctx, "trigger-elicitation-request", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("without an elicitor: %v %+v", err, res)
	}
}

type answerOut struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askingServer is a go-sdk remote server whose "ask" tool elicits a flat
// form and answers with exactly what came back; a stateless one speaks
// 2026-07-28, where the question comes back as an input-required result.
func askingServer(t *testing.T, stateless bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "v1"}, nil)
	form := &mcp.ElicitParams{Message: "Which ward?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"}},"required":["ward"]}`)}
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the person.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, answerOut, error) {
			if !stateless {
				res, err := req.Session.Elicit(ctx, form)
				if err != nil {
					return nil, answerOut{}, err
				}
				return nil, answerOut{Action: res.Action, Content: res.Content}, nil
			}
			// 2026-07-28: the question is the result; the answer comes
			// with the call made again.
			res, ok := req.Params.InputResponses["ward"].(*mcp.ElicitResult)
			if !ok || req.Params.RequestState != "asked-ward" {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ward": form}, RequestState: "asked-ward"}, answerOut{}, nil
			}
			return nil, answerOut{Action: res.Action, Content: res.Content}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestElicitationAnswerUnchanged: what the Elicitor answers is what the
// downstream server receives, for every action; no Elicitor is cancel —
// over a 2025-11-25 session (elicitation/create) and a stateless
// 2026-07-28 server (an input-required result, the call made again with
// the answer).
func TestElicitationAnswerUnchanged(t *testing.T) {
	for _, tc := range []struct {
		stateless bool
		protocol  string
	}{{false, "2025-11-25"}, {true, "2026-07-28"}} {
		t.Run(tc.protocol, func(t *testing.T) { elicitAnswerUnchanged(t, tc.stateless, tc.protocol) })
	}
}

func elicitAnswerUnchanged(t *testing.T, stateless bool, protocol string) {
	ctx := context.Background()
	s, err := connector.Open(ctx, connector.Config{Remote: &connector.Remote{URL: askingServer(t, stateless)}}, connector.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Protocol(); got != protocol {
		t.Fatalf("protocol agreed %q, want %q", got, protocol)
	}
	for _, want := range []answerOut{{Action: "accept", Content: map[string]any{"ward": "B-4"}}, {Action: "decline"}, {Action: "cancel"}} {
		elicitor := func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: want.Action, Content: want.Content}, nil
		}
		res, err := s.Call(connector.WithElicitor(ctx, elicitor), "ask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		if string(res.Structured) != string(wantJSON) {
			t.Fatalf("the server received %s, want %s", res.Structured, wantJSON)
		}
	}
	res, err := s.Call(ctx, "ask", map[string]any{})
	if err != nil || string(res.Structured) != `{"action":"cancel"}` {
		t.Fatalf("without an elicitor: %v %s", err, res.Structured)
	}
}
