package mcpserve

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
)

// An app's question during an effect reaches the person behind the
// calling MCP client as the app's own form (labelled with the connection
// and capability), an input request of run_workflow (when the run pauses
// on it) or of decide_attention_item (asked for the item), under a sealed
// RequestState bound to the tool, the item and, for run_workflow, the
// request. The person's answer goes to the app unchanged; run_workflow
// then waits for the run again. A client that cannot be asked leaves the
// question to the operator (oa attention answer).

// questionInput is the key of an app's question in InputRequests.
const questionInput = "downstream_question"

// questionState is what a forwarded question's RequestState binds.
type questionState struct {
	Tool        string `json:"tool"`
	AttentionID string `json:"attention_id"`
	RequestID   string `json:"request_id,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Replayed is the replayed of the call's first round (approvalState).
	Replayed bool `json:"replayed,omitempty"`
}

// errQuestionNeedsPerson is the tool error of a question the calling
// client cannot show.
var errQuestionNeedsPerson = toolErr{"question_needs_person", "The app is asking the person a question, and this client cannot show it (no elicitation in the app's mode, or no further round). The person answers on the host with `oa attention answer ID --as NAME`; nothing was answered for them."}

// isQuestionAnswer reports whether a call carries an answer to an app's
// question.
func isQuestionAnswer(req *mcp.CallToolRequest) bool {
	_, ok := req.Params.InputResponses[questionInput]
	return ok
}

// askQuestion answers the round with the app's question of item id when
// this process holds it and the client can show it; nil otherwise.
func (s *mcpServer) askQuestion(req *mcp.CallToolRequest, st questionState) *mcp.CallToolResult {
	q := s.c.WaitingQuestion(st.AttentionID)
	if q == nil || !s.canForward(req, q.Params) {
		return nil
	}
	token, err := s.c.SealState(st, q.TTL)
	if err != nil {
		return s.fail(st.Tool, err)
	}
	shown := *q.Params
	shown.Meta = nil
	shown.Message = fmt.Sprintf("While making a change, the app behind connection %q (capability %q) asks: %s", q.Connection, q.Capability, q.Params.Message)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{questionInput: &shown}, RequestState: token}
}

// questionAnswered opens the answer round of a forwarded question made
// for tool and hands the person's answer to the app. It returns the
// state, or a tool error.
func (s *mcpServer) questionAnswered(ctx context.Context, req *mcp.CallToolRequest, tool string) (*questionState, *mcp.CallToolResult) {
	var st questionState
	if req.Params.RequestState == "" || len(req.Params.InputResponses) != 1 {
		return nil, toolError(errState)
	}
	if err := s.c.OpenState(ctx, req.Params.RequestState, &st); err != nil || st.Tool != tool {
		return nil, toolError(errState)
	}
	resp, ok := req.Params.InputResponses[questionInput].(*mcp.ElicitResult)
	if !ok {
		return nil, toolError(errState)
	}
	_, err := s.c.AnswerQuestion(ctx, st.AttentionID, attention.Answer{Action: resp.Action, Content: resp.Content}, ByElicitation, ChannelElicitation)
	switch {
	case err == nil, blocking.Has(err, blocking.QuestionNotWaiting):
		// Not waiting: the call ended meanwhile; the item and run say how.
		return &st, nil
	case blocking.Has(err, blocking.QuestionAnswerInvalid):
		return nil, toolError(errQuestionAnswer)
	}
	return nil, s.fail(tool, err)
}

// errQuestionAnswer is the tool error of an answer that does not fit the
// app's form.
var errQuestionAnswer = toolErr{string(blocking.QuestionAnswerInvalid), "The answer does not fit the app's question (accept with the fields it asks for, decline or cancel), so nothing was sent to the app. Ask again with decide_attention_item."}

// decideQuestionTool serves decide_attention_item for a question item:
// the answer round, or asking the person (whatever decision the agent
// relays, the app's question is answered by the person, never by it). It
// returns nil for an approval item.
func (s *mcpServer) decideQuestionTool(ctx context.Context, req *mcp.CallToolRequest, a attentionArgs) *mcp.CallToolResult {
	if isQuestionAnswer(req) {
		st, bad := s.questionAnswered(ctx, req, contract.ToolDecide)
		if bad != nil {
			return bad
		}
		if st.AttentionID != a.AttentionID {
			return toolError(errState)
		}
		return s.decided(ctx, a.AttentionID)
	}
	item, err := s.c.AttentionItem(ctx, a.AttentionID)
	if err != nil || item.Kind != attention.KindDownstreamQuestion {
		return nil
	}
	if s.c.WaitingQuestion(item.ID) == nil {
		return nil // the call is gone: reject or escalate, as decided
	}
	if ask := s.askQuestion(req, questionState{Tool: contract.ToolDecide, AttentionID: item.ID}); ask != nil {
		return ask
	}
	return toolError(errQuestionNeedsPerson)
}

// decided answers decide_attention_item with the item as it now stands.
func (s *mcpServer) decided(ctx context.Context, id string) *mcp.CallToolResult {
	item, err := s.c.AttentionItem(ctx, id)
	if err != nil {
		return s.fail(contract.ToolDecide, err)
	}
	return s.answer(contract.ToolDecide, decided{item, decideNext[item.State]})
}

func init() {
	decideNext[attention.Answered] = "The person answered the app's question; the change goes on. Call get_run with the run_id for its outcome."
	decideNext[attention.Closed] = "Closed: the run ends not_sure_if_saved. Tell the person to check the record before anyone tries again."
	decideNext[attention.Lapsed] = "No one answered in time; the app was told cancel and its own answer decided the step. Call get_run for the outcome."
	toolErrorsByCode[blocking.QuestionDecisionInvalid] = toolErr{string(blocking.QuestionDecisionInvalid), "A question the app asked is answered by the person, never approved; once its call is gone, reject closes it and escalate hands it on."}
	toolErrorsByCode[blocking.QuestionStillWaiting] = toolErr{string(blocking.QuestionStillWaiting), "The app is still waiting for the person's answer; call decide_attention_item from a client that offers elicitation, or the person answers on the host (oa attention answer ID --as NAME)."}
	toolErrorsByCode[blocking.QuestionNotWaiting] = toolErr{string(blocking.QuestionNotWaiting), "No call is waiting for an answer to this question any more; see get_run for how the run stands."}
}
