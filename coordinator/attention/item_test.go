package attention

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ir"
)

var at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func pause() Pause {
	return Pause{ID: "att-1", RunID: "run-1", Deployment: "clinic", Workflow: "book",
		Step: ir.Step{ID: "save", Capability: "records.write", SkippableWhile: "inputs.optional"}, Risk: "write", At: at}
}

// TestStoredRowUnchanged: an item's stored row is the bytes the
// coordinator wrote before the records moved here, so existing
// databases read unchanged and no migration is needed.
func TestStoredRowUnchanged(t *testing.T) {
	b, err := json.Marshal(NewApproval(pause()))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"attention_id":"att-1","run_id":"run-1","workflow":"book","step":"save","capability":"records.write","risk":"write","state":"open","question":"Approve step save of workflow book, which makes a change through the consequential capability records.write?","created_at":"2026-01-02T03:04:05Z","outcome":"needs_review","skippable":true,"deployment":"clinic"}`
	if string(b) != want {
		t.Fatalf("stored row\n got %s\nwant %s", b, want)
	}
	q := NewQuestion(pause(), "records", "sha256:m", "sha256:s")
	if q.Kind != KindDownstreamQuestion || q.Skippable || q.Connection != "records" || q.MessageDigest != "sha256:m" || q.SchemaDigest != "sha256:s" {
		t.Fatalf("question item = %+v", q)
	}
}

// TestDecisionRules: who may decide what, on which item, in which state.
func TestDecisionRules(t *testing.T) {
	d := func(decision string) Decision {
		return Decision{AttentionID: "att-1", Decision: decision, By: "Dr Ada", Channel: "cli"}
	}
	if err := CheckDecision(Decision{Decision: contract.DecisionApprove, By: "  "}); !blocking.Has(err, blocking.DecisionInvalid) {
		t.Fatalf("unnamed person: %v", err)
	}
	if err := CheckDecision(d("maybe")); !blocking.Has(err, blocking.DecisionInvalid) {
		t.Fatalf("unknown decision: %v", err)
	}
	item := NewApproval(pause())
	if err := item.Decide(d(contract.DecisionEscalate), at); err != nil || item.State != Escalated || item.DecidedBy != "Dr Ada" {
		t.Fatalf("escalate: %v, %+v", err, item)
	}
	if err := item.Waits(d(contract.DecisionEscalate)); !blocking.Has(err, blocking.AttentionDecided) {
		t.Fatalf("escalated twice: %v", err)
	}
	if err := item.Waits(d(contract.DecisionSkip)); err != nil {
		t.Fatalf("escalated item refuses a decision: %v", err)
	}
	if err := item.Decide(d(contract.DecisionSkip), at); err != nil || item.State != Skipped {
		t.Fatalf("skip: %v, %+v", err, item)
	}
	if err := item.Waits(d(contract.DecisionApprove)); !blocking.Has(err, blocking.AttentionDecided) {
		t.Fatalf("decided item waits: %v", err)
	}
	p := pause()
	p.Step.SkippableWhile = ""
	fixed := NewApproval(p)
	if err := fixed.Decide(d(contract.DecisionSkip), at); !blocking.Has(err, blocking.SkipNotDeclared) || fixed.State != Open {
		t.Fatalf("skip of a step not declared skippable: %v, %+v", err, fixed)
	}
	if err := CheckQuestionDecision(d(contract.DecisionApprove)); !blocking.Has(err, blocking.QuestionDecisionInvalid) {
		t.Fatalf("approve a question: %v", err)
	}
	q := NewQuestion(pause(), "records", "m", "s")
	q.DecideQuestion(d(contract.DecisionReject), at)
	if q.State != Closed {
		t.Fatalf("rejected question = %s", q.State)
	}
}

// TestAnswerChecks: what a person's answer may carry to the app, and how
// NAME=VALUE fields are typed by the app's form.
func TestAnswerChecks(t *testing.T) {
	form := &mcp.ElicitParams{Message: "Which ward?", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"ward": map[string]any{"type": "string"}, "beds": map[string]any{"type": "integer"}}, "required": []any{"ward"}}}
	if err := CheckAnswer(form, Answer{Action: "accept", Content: map[string]any{"ward": "B"}}); err != nil {
		t.Fatalf("good answer: %v", err)
	}
	for _, bad := range []Answer{{Action: "accept", Content: map[string]any{"ward": 4}}, {Action: "accept"}, {Action: "maybe"}, {Action: "decline", Content: map[string]any{"ward": "x"}}} {
		if err := CheckAnswer(form, bad); !blocking.Has(err, blocking.QuestionAnswerInvalid) {
			t.Fatalf("answer %+v: %v", bad, err)
		}
	}
	schema, _ := json.Marshal(form.RequestedSchema)
	shown := &QuestionShown{Schema: schema}
	got, err := shown.FormContent([]string{"ward=B", "beds=3"})
	if err != nil || got["ward"] != "B" || got["beds"] != int64(3) {
		t.Fatalf("content = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"ward"}, {"floor=2"}, {"beds=three"}} {
		if _, err := shown.FormContent(bad); !blocking.Has(err, blocking.QuestionAnswerInvalid) {
			t.Fatalf("fields %v: %v", bad, err)
		}
	}
}

// TestTeachText: a teach text is bounded, UTF-8 and free of customer
// state, and its refusal never quotes it.
func TestTeachText(t *testing.T) {
	if err := CheckTeachText("Ask for the ward before saving."); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", " ", string(make([]byte, MaxTeachText+1)), "\xff\xfe", "Write to ada.lovelace@example.com first."} {
		err := CheckTeachText(bad)
		if !blocking.Has(err, blocking.TeachTextInvalid) {
			t.Fatalf("text %q: %v", bad, err)
		}
		if len(bad) > 3 && len(bad) < 100 && strings.Contains(err.Error(), bad) {
			t.Fatalf("the refusal quotes the text: %v", err)
		}
	}
}
