package connector

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
)

// A downstream server's question reaches oa two ways: as an
// elicitation/create request during a call (protocols before 2026-07-28)
// or as an input-required result of the call itself, the call made again
// with the answers (2026-07-28). Both are answered here, by one check and
// the call's Elicitor, and the answer goes to the server exactly as the
// person gave it. The go-sdk's own handling of both fills the fields the
// person left empty from the requested schema's defaults
// (jsonschema.Resolved.ApplyDefaults in Client.elicit): a form answered
// {name, check, integer} reached the server with every other field set.
// So oa answers elicitation/create in a receiving middleware, before the
// go-sdk's handler, and makes the rounds of an input-required result
// itself (the go-sdk's multi-round-trip middleware is off).

// maxRounds bounds the input-required rounds of one call.
const maxRounds = 10

// answerElicitations is the receiving middleware that answers
// elicitation/create through r, unchanged.
func answerElicitations(r *elicitRouter) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			er, ok := req.(*mcp.ElicitRequest)
			if method != "elicitation/create" || !ok {
				return next(ctx, method, req)
			}
			return r.answer(ctx, er.Params), nil
		}
	}
}

// answer asks the Elicitor of the call in flight, when the request is one
// the spec allows, and returns its answer unchanged when it fits the
// form; anything else is cancel, never an invented decision.
func (r *elicitRouter) answer(ctx context.Context, p *mcp.ElicitParams) *mcp.ElicitResult {
	schema, ok := allowedRequest(p)
	if !ok {
		return &mcp.ElicitResult{Action: "cancel"}
	}
	res, err := r.handle(ctx, &mcp.ElicitRequest{Params: p})
	if err != nil || res == nil {
		return &mcp.ElicitResult{Action: "cancel"}
	}
	out := &mcp.ElicitResult{Action: res.Action}
	switch res.Action {
	case "accept":
		if res.Content != nil {
			out.Content = maps.Clone(res.Content)
			if schema != nil && schema.Validate(out.Content) != nil {
				return &mcp.ElicitResult{Action: "cancel"}
			}
		}
	case "decline", "cancel":
	default:
		return &mcp.ElicitResult{Action: "cancel"}
	}
	return out
}

// allowedRequest checks an elicitation request as the spec has it: a URL
// request carries a URL and no schema; a form carries no URL and a flat
// object schema of primitive fields (string, number, integer, boolean,
// or an array of enum strings), returned resolved (nil: no schema).
func allowedRequest(p *mcp.ElicitParams) (*jsonschema.Resolved, bool) {
	if p == nil {
		return nil, false
	}
	switch p.Mode {
	case "url":
		return nil, p.URL != "" && p.RequestedSchema == nil
	case "", "form":
	default:
		return nil, false
	}
	if p.URL != "" {
		return nil, false
	}
	if p.RequestedSchema == nil {
		return nil, true
	}
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, false
	}
	var s jsonschema.Schema
	if json.Unmarshal(b, &s) != nil || (s.Type != "" && s.Type != "object") {
		return nil, false
	}
	for _, prop := range s.Properties {
		if prop == nil {
			continue
		}
		if len(prop.Properties) > 0 {
			return nil, false
		}
		switch prop.Type {
		case "string", "number", "integer", "boolean", "array":
		case "":
			if len(prop.Enum) == 0 {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, false
	}
	return res, true
}

// callRounds calls a tool, and while the server answers input-required
// (2026-07-28: its questions are the result), answers each question and
// makes the call again with the answers and the server's request state.
// A request for anything but elicitation (oa offers no sampling or roots)
// is refused, as is a call that asks more than maxRounds times.
func (s *Session) callRounds(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for range maxRounds {
		res, err := s.cs.CallTool(ctx, p)
		if err != nil || res.InputRequests == nil {
			return res, err
		}
		if len(res.InputRequests) == 0 {
			return nil, blocking.New(blocking.ConnectorCallFailed, "the server asked for input with no request (busy)")
		}
		answers := make(mcp.InputResponseMap, len(res.InputRequests))
		for id, ir := range res.InputRequests {
			ep, ok := ir.(*mcp.ElicitParams)
			if !ok {
				return nil, blocking.New(blocking.ConnectorCallFailed, "the server asked for input oa does not offer")
			}
			answers[id] = s.elicit.answer(ctx, ep)
		}
		next := *p
		next.InputResponses, next.RequestState = answers, res.RequestState
		p = &next
	}
	return nil, blocking.New(blocking.ConnectorCallFailed, "the server asked for input more than %d times in one call", maxRounds)
}
