package mcpserve

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One protocol era per session, every round. A tool that needs a
// person's answer returns input requests (2026-07-28's input-required
// result). A client that speaks 2026-07-28 answers them itself and calls
// again; for a client before it the go-sdk asks with elicitation/create
// and calls the handler again — but once: a second pause in the same
// call went back to that client as an input-required result it cannot
// read (content [], inputRequests, requestState, no outcome). So rounds
// of a client before 2026-07-28 are made here, each question asked with
// elicitation/create, until the tool answers with a result; the go-sdk
// never sees an input request from this server for such a client.

// maxRounds bounds the rounds of one call of a client before 2026-07-28.
const maxRounds = 10

// withRounds runs h, and for a client before 2026-07-28 makes every
// round h asks for through elicitation/create.
func (s *mcpServer) withRounds(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage, h func(context.Context, *mcp.CallToolRequest, json.RawMessage) *mcp.CallToolResult) *mcp.CallToolResult {
	res := h(ctx, req, args)
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || multiRound(req) {
		return res
	}
	for round := 0; res != nil && res.InputRequests != nil; round++ {
		if round == maxRounds || len(res.InputRequests) == 0 {
			return toolError(errInternal)
		}
		answers := make(mcp.InputResponseMap, len(res.InputRequests))
		for id, ir := range res.InputRequests {
			p, ok := ir.(*mcp.ElicitParams)
			if !ok {
				return toolError(errInternal) // this server asks only elicitations
			}
			answers[id] = elicitAsGiven(ctx, ss, p)
		}
		params := *req.Params
		params.InputResponses, params.RequestState = answers, res.RequestState
		next := *req
		next.Params = &params
		req = &next
		res = h(ctx, req, args)
	}
	return res
}

// elicitAsGiven asks the client with elicitation/create and returns the
// person's answer as it arrived: the go-sdk's Elicit fills the fields the
// person left empty from the form's defaults (keepAnswer takes the answer
// before it does). A client that cannot be asked is cancel.
func elicitAsGiven(ctx context.Context, ss *mcp.ServerSession, p *mcp.ElicitParams) *mcp.ElicitResult {
	var got *mcp.ElicitResult
	if _, err := ss.Elicit(context.WithValue(ctx, answerKey{}, &got), p); err != nil || got == nil {
		return cancelled()
	}
	return got
}

type answerKey struct{}

// keepAnswer is the sending middleware that copies an elicitation's
// answer, as the client sent it, where the context asks for it.
func keepAnswer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if dst, ok := ctx.Value(answerKey{}).(**mcp.ElicitResult); ok && err == nil {
			if er, ok := res.(*mcp.ElicitResult); ok {
				*dst = &mcp.ElicitResult{Action: er.Action, Content: maps.Clone(er.Content)}
			}
		}
		return res, err
	}
}
