package component

import (
	"encoding/json"
	"testing"

	"github.com/oa-dev/oa/ir"
)

func TestEvalArgumentsAndPredicates(t *testing.T) {
	e := NewEvaluator()
	args, err := Source(ir.EvaluatorArguments, []string{"strings"}, `{record: input.record_ref, text: "[triage:\(input.urgency)] " + strings.TrimSpace(input.summary)}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Eval(args, json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"  cough  "}`), json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if json.Unmarshal(out, &got) != nil || got["record"] != "AB-1234" || got["text"] != "[triage:soon] cough" {
		t.Fatalf("arguments = %s", out)
	}
	pred, _ := Source(ir.EvaluatorPredicate, nil, `len([for n in result.notes if n.text == input.t {n}]) > 0`)
	for _, c := range []struct {
		result string
		want   string
	}{{`{"notes":[{"text":"a"},{"text":"b"}]}`, "true"}, {`{"notes":[{"text":"a"}]}`, "false"}} {
		out, err := e.Eval(pred, json.RawMessage(`{"t":"b"}`), json.RawMessage(`{}`), json.RawMessage(c.result))
		if err != nil || string(out) != c.want {
			t.Fatalf("predicate on %s = %s, %v; want %s", c.result, out, err, c.want)
		}
	}
	// A value of the wrong kind, or a missing field, is an error, not a guess.
	guard, _ := Source(ir.EvaluatorPredicate, nil, `steps.load.status == "open"`)
	if _, err := e.Eval(guard, json.RawMessage(`{}`), json.RawMessage(`{"load":{}}`), nil); err == nil {
		t.Fatal("a predicate over a missing field evaluated")
	}
	if out, err := e.Eval(guard, json.RawMessage(`{}`), json.RawMessage(`{"load":{"status":"closed"}}`), nil); err != nil || string(out) != "false" {
		t.Fatalf("guard = %s, %v", out, err)
	}
}
