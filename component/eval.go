package component

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
)

// Evaluator evaluates components at run time with concrete values. It
// compiles each distinct source once, and each distinct JSON value it is
// given once while it is remembered (see values), and is safe for
// concurrent use (CUE values of one context are not, so evaluations take
// turns).
type Evaluator struct {
	mu      sync.Mutex
	ctx     *cue.Context
	sources map[string]compiled
	values  valueCache
}

// compiled is a component source compiled in an Evaluator's context, with
// the values in scope its text refers to.
type compiled struct {
	v    cue.Value
	uses uses
}

// NewEvaluator returns an Evaluator with its own CUE context.
func NewEvaluator() *Evaluator {
	return &Evaluator{ctx: cuecontext.New(), sources: map[string]compiled{}, values: valueCache{m: map[string]cue.Value{}}}
}

// Eval fills the component's input, steps and result (each a JSON value;
// nil leaves it open) and returns out as JSON. It fails with an *ExprError
// when the expression does not evaluate to a concrete value of its kind
// with these values. Error messages are CUE's about the expression; they
// can quote values, so callers must not show them to a calling agent.
//
// A value the source never refers to is checked to be JSON and not
// filled: it cannot change out. The steps object is filled member by
// member, so the result of a step compiled for one evaluation is reused
// by the next that sees it. The answer is the same bytes as filling every
// value whole (TestEvalSameAsFillingWhole).
func (e *Evaluator) Eval(source string, input, steps, result json.RawMessage) (json.RawMessage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.sources[source]
	if !ok {
		c = compiled{v: e.ctx.CompileString(source, cue.Filename("component.cue")), uses: usesOf(source)}
		e.sources[source] = c
	}
	if err := c.v.Err(); err != nil {
		return nil, exprError(err, source)
	}
	v := c.v
	for _, f := range []struct {
		name  string
		value json.RawMessage
		used  bool
	}{{FieldInput, input, c.uses.Input}, {FieldSteps, steps, c.uses.Steps}, {FieldResult, result, c.uses.Result}} {
		var err error
		switch {
		case f.value == nil:
		case !f.used:
			if !json.Valid(f.value) {
				err = fmt.Errorf("component: %s is not JSON", f.name)
			}
		case f.name == FieldSteps:
			v, err = e.fillMembers(v, f.name, f.value)
		default:
			v, err = e.fill(v, cue.MakePath(cue.Str(f.name)), f.name, f.value)
		}
		if err != nil {
			return nil, err
		}
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

// fill fills path of v with the JSON value b.
func (e *Evaluator) fill(v cue.Value, path cue.Path, name string, b []byte) (cue.Value, error) {
	x := e.values.get(b)
	if x == nil {
		compiled := e.ctx.CompileBytes(b, cue.Filename(name+".json"))
		if err := compiled.Err(); err != nil {
			return v, fmt.Errorf("component: %s is not JSON: %w", name, err)
		}
		e.values.put(b, compiled)
		x = &compiled
	}
	return v.FillPath(path, *x), nil
}

// fillMembers fills field name of v with the JSON object b one member at
// a time. CUE orders the fields of a struct filled so by name, so only an
// object whose members are identifiers already in that order (what the
// coordinator sends: its step ids, marshalled from a map) is split;
// anything else (and {}, which is not an open value) is filled whole.
func (e *Evaluator) fillMembers(v cue.Value, name string, b []byte) (cue.Value, error) {
	members, ok := objectMembers(b)
	if !ok || len(members) == 0 {
		return e.fill(v, cue.MakePath(cue.Str(name)), name, b)
	}
	for _, m := range members {
		var err error
		if v, err = e.fill(v, cue.MakePath(cue.Str(name), cue.Str(m.name)), name, m.value); err != nil {
			return v, err
		}
	}
	return v, nil
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members; ok is false
// unless b is one JSON object whose member names are plain labels in
// increasing order.
func objectMembers(b []byte) (members []member, ok bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for d.More() {
		t, err := d.Token()
		name, isName := t.(string)
		if err != nil || !isName || !plainLabel(name) || len(members) > 0 && name <= members[len(members)-1].name {
			return nil, false
		}
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, member{name, value})
	}
	if t, err := d.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := d.Token(); err == nil {
		return nil, false // something after the object
	}
	return members, true
}

// plainLabel reports whether name is an ASCII identifier.
func plainLabel(name string) bool {
	for i, r := range name {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return name != ""
}

// uses says which of the values in scope a component's text refers to.
type uses struct{ Input, Steps, Result bool }

// usesOf reports which of input, steps and result source refers to: every
// identifier of one of those names anywhere but as a plain field label
// counts, so a source that shadows or selects a field of that name counts
// too (never fewer than it uses). A source that does not parse, has an
// attribute, or names self (which reaches fields without naming them)
// uses all three.
func usesOf(source string) uses {
	f, err := parser.ParseFile("component.cue", source)
	if err != nil {
		return uses{true, true, true}
	}
	var u uses
	var visit func(ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			switch n.Label.(type) {
			case *ast.Ident, *ast.BasicLit:
			default:
				ast.Walk(n.Label, visit, nil)
			}
			ast.Walk(n.Value, visit, nil)
			return false
		case *ast.Ident:
			switch n.Name {
			case FieldInput:
				u.Input = true
			case FieldSteps:
				u.Steps = true
			case FieldResult:
				u.Result = true
			case "self", "__self":
				// The enclosing struct (CUE's aliasv2 experiment): it
				// reaches every field without naming it.
				u = uses{true, true, true}
			}
		case *ast.Attribute:
			// A file attribute can turn on a CUE experiment (aliasv2's
			// self, ~ aliases): whatever it allows, count everything.
			u = uses{true, true, true}
		}
		return true
	}
	ast.Walk(f, visit, nil)
	return u
}

// valueCache remembers the CUE values of the JSON an Evaluator compiled,
// keyed by the JSON's exact bytes (so a changed value is never answered
// from it), up to a bound: past it, it starts again empty. What it holds
// lives in the Evaluator's context, which a worker replaces when it grows.
type valueCache struct {
	m     map[string]cue.Value
	bytes int
}

// Bounds of an Evaluator's value cache: the JSON bytes it remembers (each
// value counted at least entryCost, for its compiled form), of which one
// value may take a quarter.
const (
	maxCachedJSON = 1 << 20
	entryCost     = 512
)

func (c *valueCache) get(b []byte) *cue.Value {
	if v, ok := c.m[string(b)]; ok {
		return &v
	}
	return nil
}

func (c *valueCache) put(b []byte, v cue.Value) {
	cost := max(len(b), entryCost)
	if cost > maxCachedJSON/4 {
		return
	}
	if c.bytes+cost > maxCachedJSON {
		clear(c.m)
		c.bytes = 0
	}
	c.m[string(b)] = v
	c.bytes += cost
}
