package component

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/oa-dev/oa/ir"
)

// TestPoolRemembersValuesNotErrors: the same evaluation a second time
// (source and the values it refers to) is answered without a worker —
// here the pool is closed, so only a remembered value can answer — while
// one that refers to another value, or whose value is an error, needs a
// worker again. A value the source never reads does not make it another
// evaluation.
func TestPoolRemembersValuesNotErrors(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, Budget{})
	lookup := mustSource(t, ir.EvaluatorArguments, nil, `{names: [input.name]}`)
	failing := mustSource(t, ir.EvaluatorPredicate, nil, `steps.load.status == "open"`)
	in := json.RawMessage(`{"name":"AB-1234"}`)
	first, err := p.Eval(ctx, lookup, in, json.RawMessage(`{}`), nil)
	if err != nil || string(first) != `{"names":["AB-1234"]}` {
		t.Fatalf("first = %s, %v", first, err)
	}
	var ee *EvalError
	if _, err := p.Eval(ctx, failing, in, json.RawMessage(`{"load":{}}`), nil); !errors.As(err, &ee) {
		t.Fatalf("failing = %v", err)
	}
	p.Close()
	again, err := p.Eval(ctx, lookup, in, json.RawMessage(`{"load":{"status":"open"}}`), json.RawMessage(`{"unread":true}`))
	if err != nil || string(again) != string(first) {
		t.Fatalf("the same evaluation again (other values it never reads) = %s, %v; want the remembered %s", again, err, first)
	}
	again[0] = 'x' // a caller's copy: the remembered value stays
	if v, err := p.Eval(ctx, lookup, in, nil, nil); err != nil || string(v) != string(first) {
		t.Fatalf("after a caller changed its copy: %s, %v", v, err)
	}
	if _, err := p.Eval(ctx, lookup, json.RawMessage(`{"name":"CD-5678"}`), nil, nil); err == nil {
		t.Fatal("another input was answered without a worker")
	}
	if _, err := p.Eval(ctx, failing, in, json.RawMessage(`{"load":{}}`), nil); err == nil || errors.As(err, &ee) {
		t.Fatalf("an evaluation whose value was an error was answered from memory: %v", err)
	}
}
