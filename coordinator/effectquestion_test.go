package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// Planted strings: the app's question and the person's answer. Neither
// may reach the store, a receipt, a result or the operator channel.
const (
	plantedQuestion = "QPLANT-7f3a which ward is the patient in?"
	plantedAnswer   = "APLANT-91c2"
)

// questionForm is the flat form the asking records server requests.
var questionForm = json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"}},"required":["ward"]}`)

// askingRecords serves the sandbox records server over Streamable HTTP,
// its append_note asking the person first (a go-sdk receiving middleware
// in the server, elicitation/create): on accept it checks the answer it
// got and appends; on decline it refuses (an error that proves nothing to
// an untrusted caller); on cancel it appends anyway — the app's own
// answer decides. A call whose question is never answered waits.
func askingRecords(t *testing.T) (string, *atomic.Bool) {
	t.Helper()
	cancelFails := &atomic.Bool{}
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
			res, err := call.Session.Elicit(ectx, &mcp.ElicitParams{Message: plantedQuestion, RequestedSchema: questionForm})
			if err != nil {
				return nil, err
			}
			switch res.Action {
			case "accept":
				if res.Content["ward"] != plantedAnswer {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "wrong answer"}}}, nil
				}
				return next(ctx, method, req)
			case "decline":
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "declined"}}}, nil
			}
			if cancelFails.Load() {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(release) // runs first
	return ts.URL + "/mcp", cancelFails
}

// questionHost binds the clinic to the asking records server.
func questionHost(t *testing.T) (*hosttest.Host, *servetest.Buffer) {
	h, operator, _ := questionHostFlag(t)
	return h, operator
}

// questionHostFlag is questionHost whose app answers a cancelled
// question with an error while the flag is set.
func questionHostFlag(t *testing.T) (*hosttest.Host, *servetest.Buffer, *atomic.Bool) {
	t.Helper()
	url, cancelFails := askingRecords(t)
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Remote: &remote.Config{URL: url}})
	h.Bind(opened, "claude-test")
	return h, &servetest.Buffer{}, cancelFails
}

func openQuestionCoordinator(t *testing.T, h *hosttest.Host, operator *servetest.Buffer) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connectPerson serves c to an in-memory MCP client; handler nil is a
// client without elicitation.
func connectPerson(t *testing.T, ctx context.Context, c *coordinator.Coordinator, handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = mcpserve.Serve(ctx, c, st) }()
	var opts *mcp.ClientOptions
	if handler != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: handler}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "v1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type shownResult struct {
	RunID       string           `json:"run_id"`
	Outcome     contract.Outcome `json:"outcome"`
	Reason      contract.Reason  `json:"reason"`
	AttentionID string           `json:"attention_id"`
}

// runOverMCP calls run_workflow and returns its result and raw JSON.
func runOverMCP(t *testing.T, ctx context.Context, cs *mcp.ClientSession, requestID string) (shownResult, string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
		"workflow": "append_triage_note", "request_id": requestID, "inputs": inputs("AB-1234"), "wait_seconds": 60}})
	if err != nil {
		t.Fatalf("run_workflow: %v", err)
	}
	if res.IsError {
		t.Fatalf("run_workflow answered an error: %+v", res.Content)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out shownResult
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, string(raw)
}

// assertNoPlanted fails when the app's question or the person's answer
// is in any file under the host folder (database, its journal, receipts)
// or in any of texts.
func assertNoPlanted(t *testing.T, home string, texts ...string) {
	t.Helper()
	err := filepath.Walk(home, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, p := range []string{"QPLANT-7f3a", plantedAnswer} {
			if strings.Contains(string(b), p) {
				t.Errorf("%s holds %q", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		for _, p := range []string{"QPLANT-7f3a", plantedAnswer} {
			if strings.Contains(s, p) {
				t.Errorf("output %d holds %q:\n%s", i, p, s)
			}
		}
	}
}

// TestEffectQuestionForwarded: an app that asks during an effect pauses
// the run on a downstream_question item; the person behind the calling
// client is shown the app's form (labelled with the connection and
// capability) and their answer reaches the app unchanged: accept → the
// change is made and checked (done); decline → the app's refusal decides
// (not_sure_if_saved, an untrusted error); cancel → the app went on by
// itself (done). The items record the action and digests only.
func TestEffectQuestionForwarded(t *testing.T) {
	h, operator := questionHost(t)
	c := openQuestionCoordinator(t, h, operator)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var outputs []string
	for _, tc := range []struct {
		action  string
		content map[string]any
		outcome contract.Outcome
		reason  contract.Reason
	}{
		{"accept", map[string]any{"ward": plantedAnswer}, contract.OutcomeDone, contract.ReasonVerified},
		{"decline", nil, contract.OutcomeNotSureIfSaved, contract.ReasonEffectUnclear},
		{"cancel", nil, contract.OutcomeDone, contract.ReasonVerified},
	} {
		var asked []string
		cs := connectPerson(t, ctx, c, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: tc.action, Content: tc.content}, nil
		})
		res, raw := runOverMCP(t, ctx, cs, "q-"+tc.action)
		outputs = append(outputs, raw)
		if res.Outcome != tc.outcome {
			t.Fatalf("%s: outcome %s, want %s (%s)", tc.action, res.Outcome, tc.outcome, raw)
		}
		if res.Reason != tc.reason {
			t.Fatalf("%s: reason %s, want %s (%s)", tc.action, res.Reason, tc.reason, raw)
		}
		if len(asked) != 1 {
			t.Fatalf("%s: the person was asked %d times, want once: %q", tc.action, len(asked), asked)
		}
		for _, part := range []string{`connection "records"`, `capability "records.note.append"`, plantedQuestion} {
			if !strings.Contains(asked[0], part) {
				t.Errorf("%s: the person was asked %q, want it to hold %q", tc.action, asked[0], part)
			}
		}
	}
	items, err := c.NeedsAttention(ctx)
	if err != nil {
		t.Fatalf("open items after the answers: %v", err)
	}
	if len(items) != 0 {
		t.Fatalf("%d open items after the answers, want none: %+v", len(items), items)
	}
	all, err := coordinator.AttentionRecords(h.Open()).List(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, it := range all {
		if it.Kind != attention.KindDownstreamQuestion {
			t.Errorf("item %s: kind %s, want %s", it.ID, it.Kind, attention.KindDownstreamQuestion)
		}
		if it.State != attention.Answered {
			t.Errorf("item %s: state %s, want %s", it.ID, it.State, attention.Answered)
		}
		if it.AnswerDigest == "" {
			t.Errorf("item %s: no answer digest", it.ID)
		}
		if it.MessageDigest == "" {
			t.Errorf("item %s: no message digest", it.ID)
		}
		if it.Connection != "records" {
			t.Errorf("item %s: connection %q, want records", it.ID, it.Connection)
		}
		actions = append(actions, it.AnswerAction)
		b, _ := json.Marshal(it)
		outputs = append(outputs, string(b))
	}
	slices.Sort(actions)
	if !slices.Equal(actions, []string{"accept", "cancel", "decline"}) {
		t.Fatalf("answers recorded: %v", actions)
	}
	c.Close()
	assertNoPlanted(t, h.Home, append(outputs, operator.String())...)
}

// TestEffectQuestionUnanswered: a calling client without elicitation is
// never asked and nothing is answered for the person: the run reads
// needs_review (downstream_question) while the app waits, and the
// question is shown on the host. When the coordinator stops before an
// answer, the app's call is cut and the run stays needs_review
// (downstream_question_unanswered) — the same after a new coordinator
// opens — until a person decides: approval is refused, reject closes it
// and the run ends not_sure_if_saved with a sealed receipt.
func TestEffectQuestionUnanswered(t *testing.T) {
	h, operator := questionHost(t)
	c := openQuestionCoordinator(t, h, operator)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := connectPerson(t, ctx, c, nil)
	res, raw := runOverMCP(t, ctx, cs, "q-unanswered")
	if res.Outcome != contract.OutcomeNeedsReview {
		t.Fatalf("paused: outcome %s, want %s (%s)", res.Outcome, contract.OutcomeNeedsReview, raw)
	}
	if res.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("paused: reason %s, want %s (%s)", res.Reason, contract.ReasonDownstreamQuestion, raw)
	}
	if res.AttentionID == "" {
		t.Fatalf("paused: no attention id (%s)", raw)
	}
	outputs := []string{raw}
	cli := h.Open()
	shown, err := coordinator.AttentionRecords(cli).ShowQuestion(ctx, res.AttentionID)
	if err != nil {
		t.Fatalf("shown on the host: %v", err)
	}
	if shown.Message != plantedQuestion {
		t.Errorf("shown on the host: message %q, want %q", shown.Message, plantedQuestion)
	}
	if shown.Connection != "records" {
		t.Errorf("shown on the host: connection %q, want records", shown.Connection)
	}
	if !strings.Contains(string(shown.Schema), `"ward"`) {
		t.Errorf("shown on the host: schema %s, want the field \"ward\"", shown.Schema)
	}
	if _, err := coordinator.DecideAttention(ctx, cli, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "ops", Channel: "cli"}); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionStillWaiting) {
		t.Fatalf("reject while the app waits: %v", err)
	}
	c.Close()
	cs.Close()

	for i := range 2 {
		c2 := openQuestionCoordinator(t, h, operator)
		got, err := c2.GetRun(ctx, res.RunID, 0)
		c2.Close()
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		wantResult(t, fmt.Sprintf("open %d", i), got, contract.OutcomeNeedsReview, contract.ReasonDownstreamQuestionUnanswered)
		if got.AttentionID != res.AttentionID {
			t.Fatalf("open %d: attention id %q, want %q", i, got.AttentionID, res.AttentionID)
		}
		b, _ := json.Marshal(got)
		outputs = append(outputs, string(b))
	}
	if _, err := coordinator.AttentionRecords(cli).AnswerQuestion(ctx, res.AttentionID, attention.Answer{Action: "accept", Content: map[string]any{"ward": plantedAnswer}}, "ops"); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionNotWaiting) {
		t.Fatalf("an answer after the call is gone: %v", err)
	}
	if _, err := coordinator.DecideAttention(ctx, cli, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionApprove, By: "ops", Channel: "cli"}); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionDecisionInvalid) {
		t.Fatalf("approve of a question: %v", err)
	}
	item, err := coordinator.DecideAttention(ctx, cli, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "ops", Channel: "cli"})
	if err != nil {
		t.Fatalf("reject: %v", err)
	}
	if item.State != attention.Closed {
		t.Fatalf("reject: item state %s, want %s", item.State, attention.Closed)
	}
	c3 := openQuestionCoordinator(t, h, operator)
	defer c3.Close()
	got, err := c3.GetRun(ctx, res.RunID, 0)
	if err != nil {
		t.Fatalf("after the decision: %v", err)
	}
	wantResult(t, "after the decision", got, contract.OutcomeNotSureIfSaved, contract.ReasonDownstreamQuestionClosed)
	if got.Proof != contract.ProofSealed {
		t.Errorf("after the decision: proof %s, want %s", got.Proof, contract.ProofSealed)
	}
	receipts, err := ledger.Open(cli).ListReceipts(ctx)
	if err != nil {
		t.Fatalf("receipts: %v", err)
	}
	if len(receipts) == 0 {
		t.Fatal("no receipts after the decision")
	}
	b, _ := json.Marshal(receipts)
	c3.Close()
	assertNoPlanted(t, h.Home, append(outputs, string(b), operator.String())...)
}

// TestEffectQuestionAnsweredOnHost: with a client without elicitation,
// the person answers on the host through the waiting coordinator: an
// answer that does not fit the app's form is refused and nothing is
// sent; a fitting one reaches the app unchanged and the run goes on to
// done.
func TestEffectQuestionAnsweredOnHost(t *testing.T) {
	h, operator := questionHost(t)
	c := openQuestionCoordinator(t, h, operator)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := connectPerson(t, ctx, c, nil)
	res, _ := runOverMCP(t, ctx, cs, "q-host")
	if res.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("paused: %+v", res)
	}
	cli := h.Open()
	for _, bad := range []attention.Answer{{Action: "accept", Content: map[string]any{"ward": 4}}, {Action: "accept"}, {Action: "maybe"}, {Action: "decline", Content: map[string]any{"ward": "x"}}} {
		if _, err := coordinator.AttentionRecords(cli).AnswerQuestion(ctx, res.AttentionID, bad, "ops"); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionAnswerInvalid) {
			t.Fatalf("answer %+v: %v", bad, err)
		}
	}
	item, err := coordinator.AttentionRecords(cli).AnswerQuestion(ctx, res.AttentionID, attention.Answer{Action: "accept", Content: map[string]any{"ward": plantedAnswer}}, "ops")
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	if item.State != attention.Answered {
		t.Errorf("answer: item state %s, want %s", item.State, attention.Answered)
	}
	if item.AnswerAction != "accept" {
		t.Errorf("answer: action %q, want accept", item.AnswerAction)
	}
	if item.DecidedBy != "ops" {
		t.Errorf("answer: decided by %q, want ops", item.DecidedBy)
	}
	got, err := c.GetRun(ctx, res.RunID, time.Minute)
	if err != nil {
		t.Fatalf("after the answer: %v", err)
	}
	wantResult(t, "after the answer", got, contract.OutcomeDone, contract.ReasonVerified)
	if _, err := coordinator.AttentionRecords(cli).AnswerQuestion(ctx, res.AttentionID, attention.Answer{Action: "cancel"}, "ops"); !slices.Contains(hosttest.Codes(t, err), blocking.QuestionNotWaiting) {
		t.Fatalf("a second answer: %v", err)
	}
	c.Close()
	assertNoPlanted(t, h.Home, operator.String())
}

// TestEffectQuestionLapsed: when no one answers within the bound, the app
// is answered cancel and its own answer decides: a change it then makes
// and that reads back is done (the item lapses); an error, which proves
// nothing, leaves the run needs_review (downstream_question_unanswered)
// with the coordinator still serving, until a person closes it.
func TestEffectQuestionLapsed(t *testing.T) {
	defer coordinator.SetQuestionTTL(200 * time.Millisecond)()
	h, operator, cancelFails := questionHostFlag(t)
	c := openQuestionCoordinator(t, h, operator)
	defer c.Close()
	ctx := context.Background()
	run := func(id string) *coordinator.Result {
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Inputs: inputs("AB-1234"), Wait: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if res.Reason != contract.ReasonDownstreamQuestion {
			t.Fatalf("%s: reason %s, want %s", id, res.Reason, contract.ReasonDownstreamQuestion)
		}
		// While the question waits, the run reads downstream_question at
		// once; once it lapses, the app's answer decides.
		for res.Reason == contract.ReasonDownstreamQuestion {
			time.Sleep(50 * time.Millisecond)
			if res, err = c.GetRun(ctx, res.RunID, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		return res
	}
	if res := run("lapse-done"); res.Outcome != contract.OutcomeDone {
		t.Fatalf("the app went on after cancel: outcome %s, want %s", res.Outcome, contract.OutcomeDone)
	} else if it, err := c.AttentionItem(ctx, res.AttentionID); err != nil {
		t.Fatalf("item: %v", err)
	} else if it.State != attention.Lapsed {
		t.Fatalf("item state %s, want %s", it.State, attention.Lapsed)
	}
	cancelFails.Store(true)
	res := run("lapse-unknown")
	if res.Outcome != contract.OutcomeNeedsReview {
		t.Fatalf("the app's error after cancel: outcome %s, want %s", res.Outcome, contract.OutcomeNeedsReview)
	}
	if res.Reason != contract.ReasonDownstreamQuestionUnanswered {
		t.Fatalf("the app's error after cancel: reason %s, want %s", res.Reason, contract.ReasonDownstreamQuestionUnanswered)
	}
	if _, err := c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionEscalate, By: "ops", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetRun(ctx, res.RunID, 0); got.Reason != contract.ReasonEscalated {
		t.Fatalf("escalated: %+v", got)
	}
	if it, err := c.Decide(ctx, attention.Decision{AttentionID: res.AttentionID, Decision: contract.DecisionReject, By: "ops", Channel: "cli"}); err != nil {
		t.Fatalf("reject: %v", err)
	} else if it.State != attention.Closed {
		t.Fatalf("reject: item state %s, want %s", it.State, attention.Closed)
	}
	got, _ := c.GetRun(ctx, res.RunID, 0)
	wantResult(t, "closed", got, contract.OutcomeNotSureIfSaved, contract.ReasonDownstreamQuestionClosed)
}

// TestEffectQuestionDecideTool: a run paused on an app's question by a
// client without elicitation is answered later by a person behind
// another client through decide_attention_item, shown the app's own form;
// the answer reaches the app and the run ends done. Without elicitation
// the tool answers a fixed error and nothing is answered for the person.
func TestEffectQuestionDecideTool(t *testing.T) {
	h, operator := questionHost(t)
	c := openQuestionCoordinator(t, h, operator)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	agent := connectPerson(t, ctx, c, nil)
	res, _ := runOverMCP(t, ctx, agent, "q-decide")
	if res.Reason != contract.ReasonDownstreamQuestion {
		t.Fatalf("paused: %+v", res)
	}
	args := map[string]any{contract.ArgAttentionID: res.AttentionID, contract.ArgDecision: contract.DecisionApprove}
	if out, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolDecide, Arguments: args}); err != nil {
		t.Fatalf("decide without elicitation: %v", err)
	} else if !out.IsError {
		t.Fatalf("decide without elicitation answered no error: %+v", out)
	} else if b, _ := json.Marshal(out.Content); !strings.Contains(string(b), "question_needs_person") {
		t.Fatalf("decide without elicitation answered %s", b)
	}
	var asked []string
	person := connectPerson(t, ctx, c, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ward": plantedAnswer}}, nil
	})
	out, err := person.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolDecide, Arguments: args})
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	if out.IsError {
		t.Fatalf("decide answered an error: %+v", out.Content)
	}
	raw, _ := json.Marshal(out.StructuredContent)
	if !strings.Contains(string(raw), `"state":"answered"`) {
		t.Errorf("decide answered %s, want state answered", raw)
	}
	if len(asked) != 1 {
		t.Fatalf("the person was asked %d times, want once: %q", len(asked), asked)
	}
	if !strings.Contains(asked[0], plantedQuestion) {
		t.Errorf("the person was asked %q, want the app's question %q", asked[0], plantedQuestion)
	}
	got, err := c.GetRun(ctx, res.RunID, time.Minute)
	if err != nil {
		t.Fatalf("after the answer: %v", err)
	}
	if got.Outcome != contract.OutcomeDone {
		t.Errorf("after the answer: outcome %s, want %s (reason %s)", got.Outcome, contract.OutcomeDone, got.Reason)
	}
	c.Close()
	assertNoPlanted(t, h.Home, string(raw), operator.String())
}
