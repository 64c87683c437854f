package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestAttentionAnswerCLI: the sandbox records server, served over
// Streamable HTTP, asks a question before it appends a note; the run
// pauses (downstream_question), `oa attention question` shows the app's
// question, a field the form does not ask for is refused (exit 2,
// nothing sent), and `oa attention answer --set` reaches the app, which
// appends: the run ends done.
// askingClinic binds the clinic, as $OA_HOME, to the sandbox records
// server served over Streamable HTTP, whose append_note first asks
// "Which ward, please?" (elicitation/create) and appends only on accept;
// got holds the content the app received.
func askingClinic(t *testing.T) (h *hosttest.Host, got *map[string]any) {
	t.Helper()
	return askingClinicWith(t, "")
}

// askingClinicWith is askingClinic on a host whose policy has policy
// added (admitted again under it).
func askingClinicWith(t *testing.T, policy string) (h *hosttest.Host, got *map[string]any) {
	t.Helper()
	got = new(map[string]any)
	srv := sandbox.NewServer("")
	// A question still waiting when the test ends is let go, so the
	// server's sessions can close.
	stop, release := context.WithCancel(context.Background())
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || call.Params.Name != "append_note" {
				return next(ctx, method, req)
			}
			ectx, done := context.WithCancel(ctx)
			defer done()
			defer context.AfterFunc(stop, done)()
			res, err := call.Session.Elicit(ectx, &mcp.ElicitParams{Message: "Which ward, please?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"},"beds":{"type":"integer"}},"required":["ward"]}`)})
			if err != nil || res.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
			}
			*got = res.Content
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(release) // runs first
	h = hosttest.New(t, nil)
	if policy != "" {
		pf, err := os.OpenFile(filepath.Join(h.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(pf, "\n%s\n", policy)
		pf.Close()
		if _, _, err := admit.Admit(context.Background(), h.Open(), h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
			t.Fatal(err)
		}
	}
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Remote: &remote.Config{URL: ts.URL + "/mcp"}})
	h.Bind(opened, "claude-test")
	t.Setenv("OA_HOME", h.Home)
	return h, got
}

func TestAttentionAnswerCLI(t *testing.T) {
	h, got := askingClinic(t)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-q", "AB-1234")
	if paused.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("run reason = %q, want %q (paused on the app's question)", paused.Reason, contract.ReasonDownstreamQuestion)
	}
	if paused.AttentionID == "" {
		t.Fatalf("paused run has no attention id: %+v", paused)
	}
	q := cliOK(t, "attention", "question", paused.AttentionID)
	wantHas(t, "attention question", q, "Which ward, please?", "field beds (integer)")
	cliRefused(t, "question_answer_invalid", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "floor=2")
	cliRefused(t, "question_answer_invalid", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "beds=many")
	cliRefused(t, "question_still_waiting", "attention", "reject", paused.AttentionID, "--as", "Dr Ada")
	var it attention.Item
	wantJSON(t, "attention answer", cliOK(t, "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--set", "ward=B-4", "--set", "beds=2", "--json"), &it)
	if it.State != attention.Answered {
		t.Errorf("attention answer: state = %q, want %q", it.State, attention.Answered)
	}
	if it.AnswerAction != "accept" {
		t.Errorf("attention answer: action = %q, want accept", it.AnswerAction)
	}
	if it.DecidedBy != "Dr Ada" {
		t.Errorf("attention answer: decided by %q, want Dr Ada", it.DecidedBy)
	}
	if t.Failed() {
		t.FailNow()
	}
	res, err := c.GetRun(context.Background(), paused.RunID, 30*time.Second)
	if err != nil {
		t.Fatalf("after the answer: %v", err)
	}
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: outcome = %q, want %q: %+v", res.Outcome, contract.OutcomeDone, res)
	}
	if (*got)["ward"] != "B-4" {
		t.Errorf("the app received ward %v, want B-4", (*got)["ward"])
	}
	if (*got)["beds"] != float64(2) {
		t.Errorf("the app received beds %v, want 2", (*got)["beds"])
	}
	cliRefused(t, "question_not_waiting", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--cancel")
}

// TestKilledCoordinatorQuestionUnanswered: `oa coordinator serve`, asked
// by a client without elicitation, pauses a run on its app's question
// (nothing is answered for the person) and is then killed with SIGKILL:
// a new coordinator reads the run needs_review
// (downstream_question_unanswered), an answer finds no call waiting, and
// `oa attention reject` closes it — the run ends not_sure_if_saved,
// never done or did_not_run. The app's question never reaches the
// operator's channel.
func TestKilledCoordinatorQuestionUnanswered(t *testing.T) {
	h, _ := askingClinic(t)
	s := startCoordinator(t, append(os.Environ(), "OA_HOME="+h.Home))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "request_id": "req-killed",
		"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "soon", "summary": "Cough."}, "wait_seconds": 60}})
	if err != nil {
		t.Fatalf("run_workflow: %v", err)
	}
	if res.IsError {
		t.Fatalf("run_workflow returned an error result: %+v", res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var paused coordinator.Result
	wantJSON(t, "run_workflow", string(raw), &paused)
	if paused.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("run reason = %q, want %q (paused on the app's question)", paused.Reason, contract.ReasonDownstreamQuestion)
	}
	s.kill(t)
	if strings.Contains(s.stderr.String(), "Which ward") {
		t.Fatalf("the operator channel holds the app's question:\n%s", s.stderr)
	}
	c := openCoordinator(t, h)
	got, err := c.GetRun(ctx, paused.RunID, 0)
	if err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	if got.Outcome != contract.OutcomeNeedsReview {
		t.Errorf("after the kill: outcome = %q, want %q", got.Outcome, contract.OutcomeNeedsReview)
	}
	if got.Reason != contract.ReasonDownstreamQuestionUnanswered {
		t.Errorf("after the kill: reason = %q, want %q", got.Reason, contract.ReasonDownstreamQuestionUnanswered)
	}
	if t.Failed() {
		t.FailNow()
	}
	cliRefused(t, "question_not_waiting", "attention", "answer", paused.AttentionID, "--as", "Dr Ada", "--decline")
	cliRefused(t, "question_decision_invalid", "attention", "approve", paused.AttentionID, "--as", "Dr Ada")
	cliOK(t, "attention", "reject", paused.AttentionID, "--as", "Dr Ada")
	got, err = c.GetRun(ctx, paused.RunID, 0)
	if err != nil {
		t.Fatalf("after the decision: %v", err)
	}
	if got.Outcome != contract.OutcomeNotSureIfSaved {
		t.Errorf("after the decision: outcome = %q, want %q", got.Outcome, contract.OutcomeNotSureIfSaved)
	}
	if got.Reason != contract.ReasonDownstreamQuestionClosed {
		t.Errorf("after the decision: reason = %q, want %q", got.Reason, contract.ReasonDownstreamQuestionClosed)
	}
	if t.Failed() {
		t.FailNow()
	}
}
