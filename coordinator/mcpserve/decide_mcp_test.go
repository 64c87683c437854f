package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// The text a person gives in a teach form; it must never reach the agent.
const teachMarker = "Zebra-7 wants the ward asked before the note"

// personAnswers answers a decision form with skip when it offers skip and
// with decision otherwise, and a teach form with text.
func personAnswers(decision, text string) func(*mcp.ElicitRequest) *mcp.ElicitResult {
	return func(req *mcp.ElicitRequest) *mcp.ElicitResult {
		schema, _ := json.Marshal(req.Params.RequestedSchema)
		switch {
		case strings.Contains(string(schema), `"text"`):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"text": text}}
		case strings.Contains(string(schema), `"skip"`):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": contract.DecisionSkip}}
		case decision == "":
			return &mcp.ElicitResult{Action: "decline"}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
	}
}

func TestServerSkipAndTeach(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	oa := servetest.Binary(t)
	h := &servetest.Host{Host: hosttest.New(t, servetest.SkippableCheck(t)), OA: oa}
	h.WriteRegistry(servetest.ReadApprovalRegistry())
	opened := h.Open()
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")
	ctx := context.Background()

	// Skip, in the run's own call: the person approves load_record (whose
	// form offers no skip), then skips confirm_note (whose form does).
	person := h.Connect(t, servetest.ClientOptions{Answer: personAnswers(contract.DecisionApprove, teachMarker)})
	res := person.Run("req-skip", triage("AB-1234", "Skipped check."))
	want(t, "skipped check", res, contract.OutcomeNotSureIfSaved, contract.ReasonSkippedNotConfirmed)
	if len(person.Asked()) != 2 {
		t.Fatalf("the person was asked %d times, want 2", len(person.Asked()))
	}
	all, err := coordinator.AttentionRecords(h.Open()).List(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var skipped int
	for _, it := range all {
		if it.State == attention.Skipped && it.Step == "confirm_note" && it.Channel == mcpserve.ChannelElicitation {
			skipped++
		}
	}
	if skipped != 1 {
		t.Fatalf("the skip is not recorded as the person's: %+v", all)
	}

	// Teach through decide_attention_item: the person gives the text in a
	// form; the run stays paused; the agent sees a count, never the text.
	decliner := h.Connect(t, servetest.ClientOptions{Answer: personAnswers("", teachMarker)})
	paused := decliner.Run("req-teach", triage("CD-5678", "Waits."))
	want(t, "paused", paused, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)
	att := paused["attention_id"]
	out, code := decliner.Call(contract.ToolDecide, map[string]any{"attention_id": att, "decision": contract.DecisionTeach})
	item, _ := out["attention_item"].(map[string]any)
	if code != "" || item["state"] != "open" || item["teach_requests"] != float64(1) {
		t.Fatalf("teach by elicitation: %v %q", out, code)
	}
	if _, code := decliner.Call(contract.ToolDecide, map[string]any{"attention_id": att, "decision": contract.DecisionSkip}); code != "skip_not_declared" {
		t.Fatalf("skip of a step the package does not declare skippable: %q", code)
	}
	reqs, err := coordinator.AttentionRecords(h.Open()).TeachRequestsFor(ctx, att.(string))
	if err != nil || len(reqs) != 1 || reqs[0].Request.Text != teachMarker || reqs[0].Request.Channel != mcpserve.ChannelElicitation {
		t.Fatalf("recorded teach requests: %+v, %v", reqs, err)
	}
	still := decliner.Run("req-teach", triage("CD-5678", "Waits."))
	want(t, "still paused", still, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)

	// A person's text holding customer state is refused, without echo.
	leaky := h.Connect(t, servetest.ClientOptions{Answer: personAnswers("", "Mail ada.lovelace@example.com "+teachMarker)})
	if _, code := leaky.Call(contract.ToolDecide, map[string]any{"attention_id": att, "decision": contract.DecisionTeach}); code != "teach_text_invalid" {
		t.Fatalf("teach text with an e-mail address: %q", code)
	}
	// Without elicitation the agent cannot teach or skip.
	agent := h.Connect(t, servetest.ClientOptions{})
	for _, d := range []string{contract.DecisionTeach, contract.DecisionSkip} {
		if _, code := agent.Call(contract.ToolDecide, map[string]any{"attention_id": att, "decision": d}); code != "approval_needs_person" {
			t.Fatalf("%s without elicitation: %q", d, code)
		}
	}
	// Made-up input responses never teach.
	r, err := agent.Raw(&mcp.CallToolParams{Name: contract.ToolDecide, Arguments: map[string]any{"attention_id": att, "decision": contract.DecisionTeach},
		InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"text": teachMarker}}}})
	if _, code := agent.Check(contract.ToolDecide, mustRes(t, r, err)); code != "request_state_invalid" {
		t.Fatalf("made-up teach Answer: %q", code)
	}
	if reqs, _ := coordinator.AttentionRecords(h.Open()).TeachRequestsFor(ctx, att.(string)); len(reqs) != 1 {
		t.Fatalf("%d teach requests, want the person's one", len(reqs))
	}
	for _, c := range []*servetest.Client{person, decliner, leaky, agent} {
		// Both views of the item go into what the client saw.
		c.Call(contract.ToolListNeedsAttention, map[string]any{})
		c.Call(contract.ToolGetAttentionItem, map[string]any{"attention_id": att})
		seen := strings.Join(c.Seen(), "\n")
		if strings.Contains(seen, "Zebra-7") || strings.Contains(seen, "lovelace") {
			t.Fatalf("the agent saw operator text:\n%s", seen)
		}
	}
}
