package component

import (
	"encoding/json"
	"fmt"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// Evaluator evaluates components at run time with concrete values. It
// compiles each distinct source once and is safe for concurrent use (CUE
// values of one context are not, so evaluations take turns).
type Evaluator struct {
	mu      sync.Mutex
	ctx     *cue.Context
	sources map[string]cue.Value
}

// NewEvaluator returns an Evaluator with its own CUE context.
func NewEvaluator() *Evaluator {
	return &Evaluator{ctx: cuecontext.New(), sources: map[string]cue.Value{}}
}

// Eval fills the component's input, steps and result (each a JSON value;
// nil leaves it open) and returns out as JSON. It fails with an *ExprError
// when the expression does not evaluate to a concrete value of its kind
// with these values. Error messages are CUE's about the expression; they
// can quote values, so callers must not show them to a calling agent.
func (e *Evaluator) Eval(source string, input, steps, result json.RawMessage) (json.RawMessage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.sources[source]
	if !ok {
		v = e.ctx.CompileString(source, cue.Filename("component.cue"))
		e.sources[source] = v
	}
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
		fill := e.ctx.CompileBytes(f.value, cue.Filename(f.name+".json"))
		if err := fill.Err(); err != nil {
			return nil, fmt.Errorf("component: %s is not JSON: %w", f.name, err)
		}
		v = v.FillPath(cue.MakePath(cue.Str(f.name)), fill)
	}
	out := v.LookupPath(cue.MakePath(cue.Str(FieldOut)))
	if err := out.Validate(cue.Concrete(true)); err != nil {
		return nil, exprError(err, source)
	}
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, exprError(err, source)
	}
	return b, nil
}
