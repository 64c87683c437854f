package component

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/ir"
)

// evalWhole is the evaluation every Eval must answer as: each value
// compiled afresh in a new context and filled whole (how Eval worked
// before it skipped unused values, split steps and remembered values).
func evalWhole(source string, input, steps, result json.RawMessage) (json.RawMessage, error) {
	ctx := cuecontext.New()
	v := ctx.CompileString(source, cue.Filename("component.cue"))
	if err := v.Err(); err != nil {
		return nil, exprError(err, source)
	}
	for _, f := range []struct {
		name  string
		value json.RawMessage
	}{{FieldInput, input}, {FieldSteps, steps}, {FieldResult, result}} {
		if f.value == nil {
			continue
		}
		fill := ctx.CompileBytes(f.value, cue.Filename(f.name+".json"))
		if err := fill.Err(); err != nil {
			return nil, fmt.Errorf("component: %s is not JSON: %w", f.name, err)
		}
		v = v.FillPath(cue.MakePath(cue.Str(f.name)), fill)
	}
	out := v.LookupPath(cue.MakePath(cue.Str(FieldOut)))
	if err := out.Validate(cue.Concrete(true)); err != nil {
		return nil, exprError(err, source)
	}
	return out.MarshalJSON()
}

// record is a clinic record as a read returns it, members out of sorted
// order, with n notes.
func record(status string, n int) string {
	var notes []string
	for i := range n {
		notes = append(notes, fmt.Sprintf(`{"text":"note %d \u00e9\"","at":%d.50,"big":123456789012345678901234567890,"flags":[true,false,null]}`, i, i))
	}
	return fmt.Sprintf(`{"status":%q,"ref":"AB-1234","notes":[%s],"meta":{"z":1,"a":2.0,"m":1e3}}`, status, strings.Join(notes, ","))
}

// TestEvalSameAsFillingWhole: every answer of an Evaluator (values
// skipped, steps filled member by member, values remembered across
// evaluations) is byte for byte, error for error, the answer of filling
// every value whole in a fresh context — whatever the order of members,
// the kinds of numbers, and with the same evaluator used again and again.
func TestEvalSameAsFillingWhole(t *testing.T) {
	sources := []string{
		mustSource(t, ir.EvaluatorArguments, nil, `{record: input.record_ref}`),
		mustSource(t, ir.EvaluatorPredicate, nil, `steps.load.status == "open"`),
		mustSource(t, ir.EvaluatorArguments, nil, `{all: steps}`),
		mustSource(t, ir.EvaluatorArguments, nil, `{n: len(steps), keys: [for k, _ in steps {k}]}`),
		mustSource(t, ir.EvaluatorArguments, nil, `{copy: steps.load, meta: steps.load.meta, first: steps.load.notes[0]}`),
		mustSource(t, ir.EvaluatorPredicate, []string{"strings"}, `len([for n in result.notes if n.text == "note 1 é\"" + strings.TrimSpace(input.x) {n}]) > 0`),
		mustSource(t, ir.EvaluatorArguments, nil, `{r: result, i: input}`),
		mustSource(t, ir.EvaluatorArguments, nil, `{s: "\(input.record_ref)-\(steps.load.ref)"}`),
		mustSource(t, ir.EvaluatorPredicate, nil, `steps.missing.status == "open"`),
		mustSource(t, ir.EvaluatorArguments, nil, `{x: 1}`),
	}
	inputs := []string{`{"record_ref":"AB-1234","x":"  "}`, `{"x":" ","record_ref":"CD-5678"}`, `{}`}
	stepsSets := []string{
		`{}`,
		`{"load":` + record("open", 2) + `}`,
		`{"load":` + record("closed", 2) + `,"effect":{"ok":true}}`,
		`{"zeta":{"b":1,"a":2},"load":` + record("open", 3) + `}`,
		`{"load":` + record("open", 2) + `,"load":{}}`,
		`[1,2]`,
	}
	results := []string{"", record("open", 2), record("open", 0)}
	e := NewEvaluator()
	for round := range 2 { // the second round answers from what the first remembered
		for _, src := range sources {
			for _, in := range inputs {
				for _, st := range stepsSets {
					for _, res := range results {
						var result json.RawMessage
						if res != "" {
							result = json.RawMessage(res)
						}
						want, wantErr := evalWhole(src, json.RawMessage(in), json.RawMessage(st), result)
						got, gotErr := e.Eval(src, json.RawMessage(in), json.RawMessage(st), result)
						if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) {
							t.Fatalf("round %d, %s\ninput %s\nsteps %s\nresult %s:\ngot  %s, %v\nwant %s, %v", round, src, in, st, res, got, gotErr, want, wantErr)
						}
					}
				}
			}
		}
	}
}

// TestEvalNeverAnswersFromAStaleValue: the values an Evaluator remembers
// are keyed by their exact bytes, and compiled sources by their exact
// text: a changed input, step result, result or evaluator is evaluated
// anew, never answered with what an earlier one gave.
func TestEvalNeverAnswersFromAStaleValue(t *testing.T) {
	e := NewEvaluator()
	args := mustSource(t, ir.EvaluatorArguments, nil, `{ref: input.record_ref, status: steps.load.status, n: len(result.notes)}`)
	eval := func(src, in, steps, result string) string {
		t.Helper()
		out, err := e.Eval(src, json.RawMessage(in), json.RawMessage(steps), json.RawMessage(result))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	open, closed := `{"load":`+record("open", 3)+`}`, `{"load":`+record("closed", 3)+`}`
	if got := eval(args, `{"record_ref":"AB-1234"}`, open, record("open", 3)); got != `{"ref":"AB-1234","status":"open","n":3}` {
		t.Fatalf("first = %s", got)
	}
	// One character changed in each value in turn.
	if got := eval(args, `{"record_ref":"AB-1235"}`, open, record("open", 3)); got != `{"ref":"AB-1235","status":"open","n":3}` {
		t.Fatalf("changed input = %s", got)
	}
	if got := eval(args, `{"record_ref":"AB-1235"}`, closed, record("open", 3)); got != `{"ref":"AB-1235","status":"closed","n":3}` {
		t.Fatalf("changed step result = %s", got)
	}
	if got := eval(args, `{"record_ref":"AB-1235"}`, closed, record("open", 4)); got != `{"ref":"AB-1235","status":"closed","n":4}` {
		t.Fatalf("changed result = %s", got)
	}
	// The same values under a changed evaluator.
	changed := mustSource(t, ir.EvaluatorArguments, nil, `{ref: input.record_ref, status: steps.load.status, n: len(result.notes) + 1}`)
	if got := eval(changed, `{"record_ref":"AB-1235"}`, closed, record("open", 4)); got != `{"ref":"AB-1235","status":"closed","n":5}` {
		t.Fatalf("changed evaluator = %s", got)
	}
	// And back: the first answers again.
	if got := eval(args, `{"record_ref":"AB-1234"}`, open, record("open", 3)); got != `{"ref":"AB-1234","status":"open","n":3}` {
		t.Fatalf("first again = %s", got)
	}
}

// TestEvalRefusesAnUnusedValueThatIsNotJSON: a value the evaluator never
// refers to is not filled, but still refused when it is not JSON.
func TestEvalRefusesAnUnusedValueThatIsNotJSON(t *testing.T) {
	e := NewEvaluator()
	src := mustSource(t, ir.EvaluatorArguments, nil, `{ref: input.record_ref}`)
	if _, err := e.Eval(src, json.RawMessage(`{"record_ref":"AB-1234"}`), json.RawMessage(`{"load":`), nil); err == nil || !strings.Contains(err.Error(), "steps is not JSON") {
		t.Fatalf("steps that are not JSON: %v", err)
	}
}

// TestUsesOf: every way a component can refer to input, steps or result
// counts; a field label of that name alone does not.
func TestUsesOf(t *testing.T) {
	for _, c := range []struct {
		expr string
		want uses
	}{
		{`{record: input.record_ref}`, uses{Input: true}},
		{`steps.load.status == "open"`, uses{Steps: true}},
		{`len([for n in result.notes {n}]) > 0`, uses{Result: true}},
		{`{s: "\(steps.load.ref)"}`, uses{Steps: true}},
		{`{let r = result
x: r}`, uses{Result: true}},
		{`{n: len(steps)}`, uses{Steps: true}},
		{`{input: 1, steps: 2, result: 3}`, uses{}},
		{`{"input": 1}`, uses{}},
		{`{a: {steps: 1}.steps}`, uses{Steps: true}}, // a selector counts: never fewer than used
		{`{[input.k]: 1}`, uses{Input: true}},
		{`{x: 1}`, uses{}},
	} {
		src := mustSource(t, ir.EvaluatorArguments, nil, c.expr)
		if got := usesOf(src); got != c.want {
			t.Errorf("usesOf(%s) = %+v, want %+v", c.expr, got, c.want)
		}
	}
	for _, source := range []string{
		"out: (",
		"@experiment(aliasv2)\ninput: _\nout: self[\"inp\" + \"ut\"].x\n",
		"input: _\nout: __self[\"inp\" + \"ut\"].x\n",
	} {
		if got := usesOf(source); got != (uses{true, true, true}) {
			t.Errorf("usesOf(%q) = %+v, want all", source, got)
		}
	}
}
