package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/hosttest"
	"github.com/oa-dev/oa/resolve"
)

// TestAttentionAnswerCLI: the sandbox records server, served over
// Streamable HTTP, asks a question before it appends a note; the run
// pauses (downstream_question), `oa attention question` shows the app's
// question, a field the form does not ask for is refused (exit 2,
// nothing sent), and `oa attention answer --set` reaches the app, which
// appends: the run ends done.
func TestAttentionAnswerCLI(t *testing.T) {
	var got map[string]any
	srv := sandbox.NewServer("")
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || call.Params.Name != "append_note" {
				return next(ctx, method, req)
			}
			res, err := call.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Which ward, please?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"},"beds":{"type":"integer"}},"required":["ward"]}`)})
			if err != nil || res.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
			}
			got = res.Content
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Remote: &connector.Remote{URL: ts.URL + "/mcp"}})
	h.Bind(opened, "claude-test")
	t.Setenv("OA_HOME", h.Home)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-q", "AB-1234")
	if paused.Reason != contract.ReasonDownstreamQuestion || paused.AttentionID == "" {
		t.Fatalf("want a run paused on the app's question: %+v", paused)
	}
	if q := cliOK(t, "attention", "question", paused.AttentionID); !strings.Contains(q, "Which ward, please?") || !strings.Contains(q, "field beds (integer)") {
		t.Fatalf("attention question:\n%s", q)
	}
	cliRefused(t, "question_answer_invalid", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "floor=2")
	cliRefused(t, "question_answer_invalid", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "beds=many")
	cliRefused(t, "question_still_waiting", "attention", "reject", paused.AttentionID, "--as", "Dr Ada")
	var it coordinator.AttentionItem
	if err := json.Unmarshal([]byte(cliOK(t, "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "ward=B-4", "--set", "beds=2", "--json")), &it); err != nil ||
		it.State != coordinator.AttentionAnswered || it.AnswerAction != "accept" || it.DecidedBy != "Dr Ada" {
		t.Fatalf("attention answer: %v %+v", err, it)
	}
	res, err := c.GetRun(context.Background(), paused.RunID, 30*time.Second)
	if err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: %v %+v", err, res)
	}
	if got["ward"] != "B-4" || got["beds"] != float64(2) {
		t.Fatalf("the app received %v", got)
	}
	cliRefused(t, "question_not_waiting", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--cancel")
}
