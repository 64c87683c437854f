package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// A downstream server's elicitation during a read, forwarded to the person
// behind the calling client (elicit.go).

type askAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askingDeployment binds the clinic to a go-sdk remote server whose "ask"
// tool (records.read) elicits a flat form and answers with exactly what
// came back, and opens a coordinator on it.
func askingDeployment(t *testing.T) (*coordinator.Coordinator, *servetest.Buffer) {
	c, operator, _ := askingDeploymentURL(t)
	return c, operator
}

// askingDeploymentURL is askingDeployment whose "ask" tool asks in URL
// mode while the returned flag is set.
func askingDeploymentURL(t *testing.T) (*coordinator.Coordinator, *servetest.Buffer, *atomic.Bool) {
	t.Helper()
	urlMode := &atomic.Bool{}
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the person.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, askAnswer, error) {
			params := &mcp.ElicitParams{Message: "Which ward is Ada in?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"}},"required":["ward"]}`)}
			if urlMode.Load() {
				params = &mcp.ElicitParams{Mode: "url", Message: "Sign in to the ward desk.", URL: "https://ward.example.com/sign-in", ElicitationID: "e-1"}
			}
			res, err := req.Session.Elicit(ctx, params)
			if err != nil {
				return nil, askAnswer{}, err
			}
			return nil, askAnswer{Action: res.Action, Content: res.Content}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Append a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, askAnswer, error) {
			return nil, askAnswer{Action: "noted"}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	h := hosttest.New(t, nil)
	h.WriteRegistry(fmt.Sprintf(`package host

host: %q
capabilities: {
	"records.read": {risk: "read_only", description: "Read one record."}
	"records.note.append": {risk: "consequential", description: "Append one note."}
}
connectors: "asking": {aliases: [], availability: "available"}
tools: [
	{name: "ask", connector: "asking", capability: "records.read", risk: "read_only", enabled: true},
	{name: "note", connector: "asking", capability: "records.note.append", risk: "consequential", enabled: true},
]
`, hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "ward-desk", "asking", connector.Config{Remote: &remote.Config{URL: srv.URL + "/mcp"}})
	h.Bind(host, "claude-test")
	operator := &servetest.Buffer{}
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, operator, urlMode
}

// TestDownstreamElicitationForwarded: a downstream server's elicitation
// during a read reaches the person behind the calling MCP client through
// the coordinator's input request, labelled with the connection and the
// capability, and the person's answer (accept with content, decline,
// cancel) reaches the server unchanged. A client without elicitation
// yields cancel without being asked. Neither the question nor the answer
// reaches the operator's channel.
func TestDownstreamElicitationForwarded(t *testing.T) {
	c, operator := askingDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = mcpserve.Serve(ctx, c, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "v1"}, &mcp.ClientOptions{ElicitationHandler: handler}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	read := func(cs *mcp.ClientSession) askAnswer {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("records_read: %v %+v", err, res)
		}
		var out struct {
			Outcome contract.Outcome `json:"outcome"`
			Content askAnswer        `json:"content"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil || out.Outcome != contract.OutcomeDone {
			t.Fatalf("records_read answered %s", raw)
		}
		return out.Content
	}
	for _, want := range []askAnswer{{Action: "accept", Content: map[string]any{"ward": "B-4"}}, {Action: "decline"}, {Action: "cancel"}} {
		var asked []string
		cs := connect(func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: want.Action, Content: want.Content}, nil
		})
		got := read(cs)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the server received %+v, want %+v", got, want)
		}
		if len(asked) != 1 || !strings.Contains(asked[0], `connection "ward-desk"`) || !strings.Contains(asked[0], `capability "records.read"`) || !strings.Contains(asked[0], "Which ward is Ada in?") {
			t.Fatalf("the person was asked %q", asked)
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = mcpserve.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "no-elicitation", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := read(cs); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("a client without elicitation: the server received %+v", got)
	}
	if log := operator.String(); strings.Contains(log, "Which ward") || strings.Contains(log, "B-4") {
		t.Fatalf("the operator channel holds the question or the answer:\n%s", log)
	}
}

// TestDownstreamURLElicitation: a URL-mode request is forwarded only to a
// client that declared URL support; a form-only client is never asked and
// the server gets cancel.
func TestDownstreamURLElicitation(t *testing.T) {
	c, _, urlMode := askingDeploymentURL(t)
	urlMode.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		caps *mcp.ClientCapabilities
		want string
	}{
		{nil, `{"action":"cancel"}`},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}, `{"action":"accept"}`},
	} {
		var asked []*mcp.ElicitParams
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = mcpserve.Serve(ctx, c, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "v1"}, &mcp.ClientOptions{Capabilities: tc.caps,
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params)
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
		cs.Close()
		if err != nil || res.IsError {
			t.Fatalf("records_read: %v %+v", err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &out)
		if string(out.Content) != tc.want {
			t.Fatalf("url support %v: the server received %s, want %s", tc.caps != nil, out.Content, tc.want)
		}
		switch {
		case tc.caps == nil && len(asked) != 0:
			t.Fatalf("a form-only client was asked a URL request: %+v", asked[0])
		case tc.caps != nil && (len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != "https://ward.example.com/sign-in"):
			t.Fatalf("a URL client was asked %+v", asked)
		}
	}
}
