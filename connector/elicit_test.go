package connector_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// TestElicitationServerEverything: the stock server-everything's
// trigger-elicitation-request (listed because oa's client offers
// elicitation) asks during a call; the Elicitor of that call is asked with
// the server's form, and accept, decline and cancel each complete the
// call. A call without an Elicitor is answered cancel and completes too.
func TestElicitationServerEverything(t *testing.T) {
	srv := interoptest.StartEverything(t)
	ctx := context.Background()
	s, err := connector.Open(ctx, connector.Config{Remote: &remote.Config{URL: srv.URL}}, connector.Options{Timeout: 30 * time.Second})
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
	s, err := connector.Open(ctx, connector.Config{Remote: &remote.Config{URL: askingServer(t, stateless)}}, connector.Options{Timeout: 10 * time.Second})
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

// TestElicitationAnswerNotFilled (issue 39): a form answered accept with
// {name, check, integer} reaches the server with exactly those fields,
// though its schema gives defaults for others — the stock
// server-everything (elicitation/create, 2025-11-25; it answers in text
// with the raw result it received) and a go-sdk server whose form has
// defaults, over elicitation/create and over a 2026-07-28 input-required
// result.
func TestElicitationAnswerNotFilled(t *testing.T) {
	ctx := context.Background()
	person := map[string]any{"name": "Ada Lovelace", "check": true, "integer": float64(7)}
	elicitor := func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: maps.Clone(person)}, nil
	}
	t.Run("server-everything", func(t *testing.T) {
		srv := interoptest.StartEverything(t)
		s, err := connector.Open(ctx, connector.Config{Remote: &remote.Config{URL: srv.URL}}, connector.Options{Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Call(connector.WithElicitor(ctx, elicitor), "trigger-elicitation-request", map[string]any{})
		if err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		text, _ := res.Text()
		i := strings.Index(text, "Raw result: ")
		if i < 0 {
			t.Fatalf("server-everything answered %q", text)
		}
		var got struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if err := json.Unmarshal([]byte(text[i+len("Raw result: "):]), &got); err != nil {
			t.Fatal(err)
		}
		if got.Action != "accept" || !reflect.DeepEqual(got.Content, person) {
			t.Fatalf("the server received %+v, the person answered %v", got, person)
		}
	})
	for _, tc := range []struct {
		stateless bool
		protocol  string
	}{{false, "2025-11-25"}, {true, "2026-07-28"}} {
		t.Run(tc.protocol, func(t *testing.T) {
			s, err := connector.Open(ctx, connector.Config{Remote: &remote.Config{URL: defaultsServer(t, tc.stateless)}}, connector.Options{Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Protocol(); got != tc.protocol {
				t.Fatalf("protocol agreed %q, want %q", got, tc.protocol)
			}
			res, err := s.Call(connector.WithElicitor(ctx, elicitor), "ask", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"action":"accept","content":{"check":true,"integer":7,"name":"Ada Lovelace"}}`; string(res.Structured) != want {
				t.Fatalf("the server received %s, want %s", res.Structured, want)
			}
		})
	}
}

// defaultsServer is askingServer with a form whose fields the person may
// leave empty have defaults.
func defaultsServer(t *testing.T, stateless bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "defaults", Version: "v1"}, nil)
	form := &mcp.ElicitParams{Message: "Who?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string"},"check":{"type":"boolean"},"integer":{"type":"integer"},
		"firstLine":{"type":"string","default":"Hello"},"number":{"type":"number","default":3.14},
		"color":{"type":"string","enum":["red","green"],"default":"red"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a"]}},"required":["name"]}`)}
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the person.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, answerOut, error) {
			if !stateless {
				// The go-sdk's Elicit fills defaults on this side too:
				// the answer is taken as it arrived (wire, below).
				var got *mcp.ElicitResult
				if _, err := req.Session.Elicit(context.WithValue(ctx, wireKey{}, &got), form); err != nil || got == nil {
					return nil, answerOut{}, err
				}
				return nil, answerOut{Action: got.Action, Content: got.Content}, nil
			}
			res, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult)
			if !ok || req.Params.RequestState != "asked-who" {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": form}, RequestState: "asked-who"}, answerOut{}, nil
			}
			return nil, answerOut{Action: res.Action, Content: res.Content}, nil
		})
	s.AddSendingMiddleware(wire)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type wireKey struct{}

// wire keeps a copy of an elicitation's answer as it arrived, before the
// go-sdk's Elicit changes it, where the context asks for it.
func wire(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if dst, ok := ctx.Value(wireKey{}).(**mcp.ElicitResult); ok && err == nil {
			if er, ok := res.(*mcp.ElicitResult); ok {
				*dst = &mcp.ElicitResult{Action: er.Action, Content: maps.Clone(er.Content)}
			}
		}
		return res, err
	}
}
