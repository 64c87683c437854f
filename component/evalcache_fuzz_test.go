package component

import (
	"encoding/json"
	"testing"

	"github.com/oa-dev/oa/ir"
)

// FuzzStepsSameAsWhole: whatever steps object an evaluator is given —
// split member by member or filled whole (objectMembers decides) — its
// answer is the answer of filling it whole in a fresh context.
func FuzzStepsSameAsWhole(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":1,"b":{"c":[1,2.50,"x"]}}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"load_record":{"status":"open","notes":[{"text":"n"}]},"append_note":{}}`, `[1]`, `{"a":1} {}`, `{"é":1}`,
	} {
		f.Add(seed)
	}
	src, err := Source(ir.EvaluatorArguments, nil, `{all: steps, n: len(steps)}`)
	if err != nil {
		f.Fatal(err)
	}
	e := NewEvaluator()
	f.Fuzz(func(t *testing.T, steps string) {
		if !json.Valid([]byte(steps)) || len(steps) > 4096 {
			return
		}
		want, wantErr := evalWhole(src, json.RawMessage(`{}`), json.RawMessage(steps), nil)
		got, gotErr := e.Eval(src, json.RawMessage(`{}`), json.RawMessage(steps), nil)
		if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("steps %s: got %s, %v; want %s, %v", steps, got, gotErr, want, wantErr)
		}
	})
}
