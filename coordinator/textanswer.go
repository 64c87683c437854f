package coordinator

import (
	"bytes"
	"encoding/json"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// stepResult is what later steps (and a check's predicate) see of a read
// or check step's answer: the structured content, or for a step declared
// answer text, the server's text as {"text": …} with "json" added when
// that text parses as JSON. Like any step result it stays in the run: it
// goes to evaluators only, never to the agent, the operator, telemetry or
// a record (a check's evidence keeps its digest).
func stepResult(s ir.Step, res *connector.CallResult) json.RawMessage {
	if s.Answer != ir.AnswerText {
		return res.Structured
	}
	return textAnswer(res)
}

// textAnswer is {"text": …, "json": …} in canonical JSON: the text blocks
// of res joined by newlines ("" when it has none), and their value when
// the text is one JSON value.
func textAnswer(res *connector.CallResult) json.RawMessage {
	text, _ := res.Text()
	out := struct {
		Text string          `json:"text"`
		JSON json.RawMessage `json:"json,omitempty"`
	}{Text: text}
	if t := bytes.TrimSpace([]byte(text)); json.Valid(t) {
		if v, err := canonical.Transform(t); err == nil {
			out.JSON = v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{"text":""}`) // a string and canonical JSON always encode: never reached
	}
	if c, err := canonical.Transform(b); err == nil {
		return c
	}
	return b
}
