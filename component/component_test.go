package component

import (
	"errors"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/ir"
)

var testScope = Scope{
	Inputs: ir.InputSchema{
		Type: "object",
		Properties: map[string]ir.InputProperty{
			"record_ref": {Type: "string"},
			"urgency":    {Type: "string", Enum: []string{"routine", "urgent"}},
			"count":      {Type: "integer"},
			"note":       {Type: "string"},
		},
		Required: []string{"count", "record_ref", "urgency"},
	},
	Steps: []string{"load"},
}

func mustSource(t *testing.T, kind ir.EvaluatorKind, imports []string, expr string) string {
	t.Helper()
	src, err := Source(kind, imports, expr)
	if err != nil {
		t.Fatalf("Source(%q): %v", expr, err)
	}
	return src
}

func TestSourceIsStableAndSortsImports(t *testing.T) {
	a := mustSource(t, ir.EvaluatorArguments, []string{"strings", "list"}, `{record: input.record_ref}`)
	b := mustSource(t, ir.EvaluatorArguments, []string{"list", "strings"}, `{record: input.record_ref}`)
	if a != b {
		t.Fatalf("import order changed the source:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, "package component") || !strings.Contains(a, "out: {record: input.record_ref}") {
		t.Fatalf("unexpected component:\n%s", a)
	}
	if strings.Index(a, `"list"`) > strings.Index(a, `"strings"`) {
		t.Fatalf("imports not sorted:\n%s", a)
	}
}

func TestSourceRefusesNonExpression(t *testing.T) {
	for _, expr := range []string{`{record: `, `import "tool/exec"`, `a: 1 b: 2`} {
		_, err := Source(ir.EvaluatorArguments, nil, expr)
		var ee *ExprError
		if !errors.As(err, &ee) {
			t.Errorf("Source(%q) = %v, want *ExprError", expr, err)
		}
	}
}

func TestCheckAcceptsWellTypedExpressions(t *testing.T) {
	ctx := cuecontext.New()
	cases := []struct {
		kind    ir.EvaluatorKind
		imports []string
		expr    string
		scope   Scope
	}{
		{ir.EvaluatorArguments, []string{"strings"}, `{record: input.record_ref, text: strings.ToUpper(input.urgency)}`, testScope},
		{ir.EvaluatorArguments, nil, `{record: input.record_ref, if input.note != _|_ {note: input.note}}`, testScope},
		{ir.EvaluatorPredicate, nil, `steps.load.status == "open"`, testScope},
		{ir.EvaluatorPredicate, nil, `len([for n in result.notes if n.text == input.record_ref {n}]) > 0`, Scope{Inputs: testScope.Inputs, Result: true}},
		{ir.EvaluatorPredicate, nil, `input.count < 10`, testScope},
	}
	for _, c := range cases {
		src := mustSource(t, c.kind, c.imports, c.expr)
		if err := Check(ctx, c.kind, src, c.scope); err != nil {
			t.Errorf("Check(%q) = %v, want nil", c.expr, err)
		}
	}
}

func TestCheckRefusesOutOfScopeAndWrongKind(t *testing.T) {
	ctx := cuecontext.New()
	cases := []struct {
		name    string
		kind    ir.EvaluatorKind
		imports []string
		expr    string
		scope   Scope
		want    string
	}{
		{"undeclared input", ir.EvaluatorArguments, nil, `{record: input.nope}`, testScope, "undefined field"},
		{"later step", ir.EvaluatorPredicate, nil, `steps.later.ok`, testScope, "undefined field"},
		{"result outside check", ir.EvaluatorPredicate, nil, `result.ok == true`, testScope, "undefined field"},
		{"package not imported", ir.EvaluatorArguments, nil, `{a: strings.ToUpper(input.record_ref)}`, testScope, "strings"},
		{"predicate yields string", ir.EvaluatorPredicate, nil, `input.record_ref`, testScope, "conflicting values"},
		{"arguments yield list", ir.EvaluatorArguments, nil, `[input.record_ref]`, testScope, "conflicting values"},
		{"type conflict", ir.EvaluatorPredicate, nil, `input.count & "x" == "x"`, testScope, "conflicting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := mustSource(t, c.kind, c.imports, c.expr)
			err := Check(ctx, c.kind, src, c.scope)
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("Check(%q) = %v, want *ExprError", c.expr, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%q) = %q, want it to mention %q", c.expr, err, c.want)
			}
		})
	}
}

func TestCheckPure(t *testing.T) {
	allowed := []string{"strings", "list"}
	if err := CheckPure(mustSource(t, ir.EvaluatorArguments, []string{"strings"}, `{}`), allowed); err != nil {
		t.Fatalf("allowed import refused: %v", err)
	}
	for _, path := range []string{"tool/exec", "tool/file", "tool/http", "example.com/x"} {
		src := mustSource(t, ir.EvaluatorArguments, []string{path}, `{}`)
		var ie *ImportError
		if err := CheckPure(src, allowed); !errors.As(err, &ie) || ie.Path != path {
			t.Errorf("CheckPure with %s = %v, want ImportError", path, err)
		}
	}
}

// TestCheckTypesTextAnswers: a step with answer text is seen as
// {text: string, json?: _}, closed, by later steps and by its own check's
// predicate; anything else on it is refused at compile.
func TestCheckTypesTextAnswers(t *testing.T) {
	ctx := cuecontext.New()
	text := Scope{Inputs: testScope.Inputs, Steps: []string{"load"}, TextSteps: []string{"load"}}
	result := Scope{Inputs: testScope.Inputs, Result: true, TextResult: true}
	for _, c := range []struct {
		kind    ir.EvaluatorKind
		imports []string
		expr    string
		scope   Scope
	}{
		{ir.EvaluatorPredicate, []string{"strings"}, `strings.Contains(steps.load.text, input.record_ref)`, text},
		{ir.EvaluatorPredicate, nil, `steps.load.json != _|_ && steps.load.json.ward == "B-4"`, text},
		{ir.EvaluatorArguments, nil, `{ward: steps.load.json.ward}`, text},
		{ir.EvaluatorPredicate, []string{"strings"}, `strings.Contains(result.text, input.record_ref)`, result},
	} {
		src := mustSource(t, c.kind, c.imports, c.expr)
		if err := Check(ctx, c.kind, src, c.scope); err != nil {
			t.Errorf("Check(%q) = %v, want nil", c.expr, err)
		}
	}
	for _, c := range []struct {
		expr  string
		scope Scope
		want  string
	}{
		{`steps.load.status == "open"`, text, "status"},
		{`steps.load.text & 3 == 3`, text, "conflicting"},
		{`result.notes == []`, result, "notes"},
	} {
		src := mustSource(t, ir.EvaluatorPredicate, nil, c.expr)
		if err := Check(ctx, ir.EvaluatorPredicate, src, c.scope); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v, want a refusal naming %q", c.expr, err, c.want)
		}
	}
}
