package component

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/testkit/cputime"
)

// BenchmarkPoolClinicRun: the five evaluations of one run of the clinic
// example's append_triage_note (record_lookup, record_is_open,
// triage_note, record_lookup, note_on_record) through a Pool, the record
// carrying 50 notes, each run's note new. worker-cpu-ms/op is the
// workers' CPU time per run (read from /proc, 10 ms ticks: use many
// runs), which the machine's load does not inflate as it does wall time.
func BenchmarkPoolClinicRun(b *testing.B) {
	p, err := NewPool(Budget{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	src := func(kind ir.EvaluatorKind, imports []string, expr string) string {
		s, err := Source(kind, imports, expr)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	lookup := src(ir.EvaluatorArguments, nil, `{record: input.record_ref}`)
	open := src(ir.EvaluatorPredicate, nil, `steps.load_record.status == "open"`)
	note := src(ir.EvaluatorArguments, []string{"strings"}, `{
	record: input.record_ref
	text:   "[triage:\(input.urgency)] " + strings.TrimSpace(input.summary)
}`)
	onRecord := src(ir.EvaluatorPredicate, []string{"strings"}, `len([for n in result.notes if n.text == "[triage:\(input.urgency)] " + strings.TrimSpace(input.summary) {n}]) > 0`)
	var notes []string
	for i := range 50 {
		notes = append(notes, fmt.Sprintf(`{"at":"2026-12-04T10:00:%02dZ","text":"[triage:routine] Earlier note %d."}`, i%60, i))
	}
	rec := func(notes []string) json.RawMessage {
		return json.RawMessage(`{"notes":[` + strings.Join(notes, ",") + `],"record_ref":"AB-1234","status":"open"}`)
	}
	ctx := context.Background()
	eval := func(source string, input, steps, result json.RawMessage) json.RawMessage {
		out, err := p.Eval(ctx, source, input, steps, result)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	i := 0
	cpu := cputime.Live()
	b.ReportAllocs()
	for b.Loop() {
		i++
		summary := fmt.Sprintf("Benchmark note %d.", i)
		input := json.RawMessage(fmt.Sprintf(`{"record_ref":"AB-1234","summary":%q,"urgency":"routine"}`, summary))
		before := rec(notes)
		args := eval(lookup, input, json.RawMessage(`{}`), nil)
		steps := json.RawMessage(`{"load_record":` + string(before) + `}`)
		if string(eval(open, input, steps, nil)) != "true" {
			b.Fatal("record_is_open")
		}
		eval(note, input, steps, nil)
		notes = append(notes[1:], fmt.Sprintf(`{"at":"2026-12-04T10:01:00Z","text":"[triage:routine] %s"}`, summary))
		after := rec(notes)
		steps = json.RawMessage(`{"append_note":{"ok":true},"load_record":` + string(before) + `}`)
		if string(eval(lookup, input, steps, nil)) != string(args) {
			b.Fatal("record_lookup")
		}
		if string(eval(onRecord, input, steps, after)) != "true" {
			b.Fatal("note_on_record")
		}
	}
	b.ReportMetric(cputime.PerOp(cputime.Live()-cpu, b.N), "worker-cpu-ms/op")
}
