package component

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/ir"
)

// cubic is the guard of issue 22 (D3): cubic in the length of an input.
const cubic = `len([for a in strings.Split(input.summary, "") for b in strings.Split(input.summary, "") for c in strings.Split(input.summary, "") {1}]) > 0`

func newTestPool(t *testing.T, b Budget) *Pool {
	t.Helper()
	p, err := NewPool(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func longSummary() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"summary":%q}`, strings.Repeat("x", 2000)))
}

// TestPoolEvaluates: a worker answers as the in-process evaluator does,
// values and evaluation errors alike, and is reused.
func TestPoolEvaluates(t *testing.T) {
	p := newTestPool(t, Budget{})
	args := mustSource(t, ir.EvaluatorArguments, []string{"strings"}, `{record: input.record_ref, text: strings.TrimSpace(input.summary)}`)
	for range 3 {
		out, err := p.Eval(context.Background(), args, json.RawMessage(`{"record_ref":"AB-1234","summary":"  cough  "}`), json.RawMessage(`{}`), nil)
		if err != nil || string(out) != `{"record":"AB-1234","text":"cough"}` {
			t.Fatalf("arguments = %s, %v", out, err)
		}
	}
	guard := mustSource(t, ir.EvaluatorPredicate, nil, `steps.load.status == "open"`)
	var ee *EvalError
	if _, err := p.Eval(context.Background(), guard, json.RawMessage(`{}`), json.RawMessage(`{"load":{}}`), nil); !errors.As(err, &ee) {
		t.Fatalf("a predicate over a missing field: %v, want an *EvalError", err)
	}
	if p.live != 1 {
		t.Fatalf("%d workers for evaluations made one after another, want 1 reused", p.live)
	}
}

// TestPoolBoundsTime: the cubic guard over a 2,000-character summary is
// ended at the budget's time with ErrOverTime (issue 22, D3: it ran for
// ever and held every other evaluation behind it).
func TestPoolBoundsTime(t *testing.T) {
	p := newTestPool(t, Budget{Time: 300 * time.Millisecond, Memory: 1 << 30})
	_, err := p.Eval(context.Background(), mustSource(t, ir.EvaluatorPredicate, []string{"strings"}, cubic), longSummary(), json.RawMessage(`{}`), nil)
	if !errors.Is(err, ErrOverTime) || !errors.Is(err, ErrOverBudget) {
		t.Fatalf("cubic guard: %v, want ErrOverTime", err)
	}
	// The pool goes on serving.
	out, err := p.Eval(context.Background(), mustSource(t, ir.EvaluatorPredicate, nil, `input.n > 1`), json.RawMessage(`{"n":2}`), nil, nil)
	if err != nil || string(out) != "true" {
		t.Fatalf("after an evaluation over time: %s, %v", out, err)
	}
}

// TestPoolBoundsMemory: an evaluator that doubles a string thirty times
// (4 GiB) is ended by its memory budget with ErrOverMemory, long before
// its time budget.
func TestPoolBoundsMemory(t *testing.T) {
	p := newTestPool(t, Budget{Time: 10 * time.Minute, Memory: 64 << 20})
	var b strings.Builder
	b.WriteString("input: _\nx0: input.s\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "x%d: x%d + x%d\n", i, i-1, i-1)
	}
	b.WriteString("out: len(x30) > 0\n")
	_, err := p.Eval(context.Background(), b.String(), json.RawMessage(`{"s":"abcd"}`), nil, nil)
	if !errors.Is(err, ErrOverMemory) {
		t.Fatalf("doubling: %v, want ErrOverMemory", err)
	}
}

// TestPoolEvaluationsDoNotWait: while one evaluation runs away, others are
// answered at once by other workers; the runaway ends when its caller's
// context does (as when the coordinator closes), with the context's error.
func TestPoolEvaluationsDoNotWait(t *testing.T) {
	p := newTestPool(t, Budget{Time: 10 * time.Minute, Memory: 1 << 30})
	ctx, cancel := context.WithCancel(context.Background())
	slow := make(chan error, 1)
	go func() {
		_, err := p.Eval(ctx, mustSource(t, ir.EvaluatorPredicate, []string{"strings"}, cubic), longSummary(), nil, nil)
		slow <- err
	}()
	quick := mustSource(t, ir.EvaluatorPredicate, nil, `input.n > 1`)
	for i := range 20 {
		out, err := p.Eval(context.Background(), quick, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), nil, nil)
		if err != nil || string(out) != fmt.Sprint(i > 1) {
			t.Fatalf("quick evaluation %d: %s, %v", i, out, err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("the runaway evaluation ended by itself: %v", err)
	default:
	}
	cancel()
	if err := <-slow; !errors.Is(err, context.Canceled) {
		t.Fatalf("runaway after its context ended: %v", err)
	}
}

// TestPoolWorkerStaysWithinBudgetOverManyEvaluations: a CUE context keeps
// what it compiled, so a worker reused for hundreds of evaluations of large
// inputs grew until its memory watchdog ended it, and ordinary runs read
// over budget under load. Workers start afresh before that.
func TestPoolWorkerStaysWithinBudgetOverManyEvaluations(t *testing.T) {
	p := newTestPool(t, Budget{Memory: 32 << 20})
	var notes strings.Builder
	notes.WriteString(`{"notes":[`)
	for i := range 1000 {
		if i > 0 {
			notes.WriteByte(',')
		}
		fmt.Fprintf(&notes, `{"id":"AB-1234-N%d","text":"[triage:soon] Load note %d of client 0."}`, i, i)
	}
	notes.WriteString(`]}`)
	pred := mustSource(t, ir.EvaluatorPredicate, []string{"strings"}, `len([for n in result.notes if n.text == "[triage:\(input.urgency)] " + strings.TrimSpace(input.summary) {n}]) > 0`)
	for i := range 200 {
		out, err := p.Eval(context.Background(), pred, json.RawMessage(fmt.Sprintf(`{"urgency":"soon","summary":"Load note %d of client 0."}`, i)), json.RawMessage(`{}`), json.RawMessage(notes.String()))
		if err != nil || string(out) != "true" {
			t.Fatalf("evaluation %d: %s, %v", i, out, err)
		}
	}
}

// TestPoolEvaluatesAhead: the arguments that read the inputs alone, sent
// ahead with an evaluation, are evaluated on its worker after its answer
// and remembered — a later Eval of them needs no worker (the pool is
// closed by then) — while one that reads a step is evaluated when its
// step asks for it, and one that goes over budget ahead changes nothing
// about the answer, is not remembered, and fails when asked for.
func TestPoolEvaluatesAhead(t *testing.T) {
	p := newTestPool(t, Budget{Time: 300 * time.Millisecond, Memory: 1 << 30})
	in := json.RawMessage(`{"record_ref":"AB-1234","summary":"` + strings.Repeat("x", 2000) + `"}`)
	first := mustSource(t, ir.EvaluatorArguments, nil, `{record: input.record_ref}`)
	inputOnly := mustSource(t, ir.EvaluatorArguments, []string{"strings"}, `{n: len(input.summary), r: strings.ToLower(input.record_ref)}`)
	readsStep := mustSource(t, ir.EvaluatorArguments, nil, `{s: steps.load.status}`)
	overBudget := mustSource(t, ir.EvaluatorPredicate, []string{"strings"}, cubic)
	out, err := p.EvalAhead(context.Background(), first, in, json.RawMessage(`{}`), nil, []string{first, inputOnly, readsStep, overBudget})
	if err != nil || string(out) != `{"record":"AB-1234"}` {
		t.Fatalf("the evaluation sent with others ahead = %s, %v", out, err)
	}
	// The worker comes back (or is ended, over budget) once the
	// evaluations ahead are answered.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		settled := len(p.idle) == p.live
		p.mu.Unlock()
		if settled || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := p.done.Len(); got != 2 {
		t.Fatalf("%d values remembered, want the evaluation's and the one ahead that reads the inputs alone", got)
	}
	p.Close()
	if out, err := p.Eval(context.Background(), inputOnly, in, json.RawMessage(`{"load":{}}`), nil); err != nil || string(out) != `{"n":2000,"r":"ab-1234"}` {
		t.Fatalf("the one evaluated ahead, asked for = %s, %v: want it remembered", out, err)
	}
	if _, err := p.Eval(context.Background(), readsStep, in, json.RawMessage(`{"load":{"status":"open"}}`), nil); !errors.Is(err, errPoolClosed) {
		t.Fatalf("one that reads a step, asked for: %v, want it evaluated now (the pool is closed)", err)
	}
	q := newTestPool(t, Budget{Time: 300 * time.Millisecond, Memory: 1 << 30})
	if _, err := q.EvalAhead(context.Background(), first, in, nil, nil, []string{overBudget}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Eval(context.Background(), overBudget, in, nil, nil); !errors.Is(err, ErrOverTime) {
		t.Fatalf("the one over budget ahead, asked for: %v, want ErrOverTime", err)
	}
}
