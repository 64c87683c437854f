package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// askedForm is the form the asking server requests: a string, an
// integer, a number, a boolean and an enum, two of them required.
var askedForm = json.RawMessage(`{"type":"object","properties":{
"ward":{"type":"string","title":"Ward","description":"The ward the patient is in"},
"beds":{"type":"integer","title":"Free beds"},
"temp":{"type":"number","title":"Temperature"},
"isolate":{"type":"boolean","title":"Isolate the patient"},
"priority":{"type":"string","title":"Priority","enum":["low","high"]}},
"required":["ward","priority"]}`)

// asking is the answers an asking server's app got, in order.
type asking struct {
	mu  sync.Mutex
	got []*mcp.ElicitResult
}

func (a *asking) answers() []*mcp.ElicitResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*mcp.ElicitResult(nil), a.got...)
}

// askingServer serves the sandbox records server over Streamable HTTP,
// its append_note asking params first (elicitation/create, as
// coordinator/effectquestion_test.go raises a question): on accept it
// appends, else it answers an error. Every answer it gets is kept.
func askingServer(t *testing.T, params mcp.ElicitParams) (string, *asking) {
	t.Helper()
	a := &asking{}
	srv := sandbox.NewServer("")
	stop, release := context.WithCancel(context.Background())
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || call.Params.Name != "append_note" {
				return next(ctx, method, req)
			}
			ectx, done := context.WithCancel(ctx)
			defer done()
			defer context.AfterFunc(stop, done)()
			p := params
			res, err := call.Session.Elicit(ectx, &p)
			if err != nil {
				return nil, err
			}
			a.mu.Lock()
			a.got = append(a.got, res)
			a.mu.Unlock()
			if res.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(release) // runs first
	return ts.URL + "/mcp", a
}

// newQuestionFixture is the console fixture bound to an asking server
// (no approval needed: the run pauses on the app's question only).
func newQuestionFixture(t *testing.T, params mcp.ElicitParams) (*fixture, *asking) {
	t.Helper()
	u, a := askingServer(t, params)
	f := newFixtureConn(t, nil, resolve.StarterRegistry(hosttest.Name), "records", connector.Config{Remote: &remote.Config{URL: u}})
	return f, a
}

// askedRun runs the workflow to the app's question and returns the
// item's id and the run's.
func (f *fixture) askedRun(t *testing.T, requestID string) (id, run string) {
	t.Helper()
	res := f.run(t, requestID, "AB-1234")
	if res.Reason != contract.ReasonDownstreamQuestion || res.AttentionID == "" {
		t.Fatalf("not paused on the app's question: %+v", res)
	}
	return res.AttentionID, res.RunID
}

// prepareAnswer posts the answer form and returns the statement and its
// time.
func (c *client) prepareAnswer(id string, form url.Values) (statement, at string) {
	c.t.Helper()
	resp, body := c.post("/items/"+id+"/answer/prepare", form)
	m, a := statementPre.FindStringSubmatch(body), atField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || a == nil {
		c.t.Fatalf("prepare the answer: %s\n%s", resp.Status, body)
	}
	return html.UnescapeString(m[1]), a[1]
}

// with is form with the fields of more added.
func with(form url.Values, more ...string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(more); i += 2 {
		out.Set(more[i], more[i+1])
	}
	return out
}

// TestAnswerQuestionThroughConsole: a run paused on the app's question
// shows, from the inbox, the app's form rendered from its own schema
// (each field labelled, typed inputs, the enum as a choice); every bad
// answer — an unknown field, a value of another type, a required field
// left out, a value outside the enum, no action, an unknown person, a
// person without the right, another's key, a signature over another
// answer — is refused with its code, changes nothing on the host and
// sends the app nothing; ada's signed answer reaches the app typed as
// the form asks, the run ends done, and the item keeps her statement,
// which names the answer's digest and verifies. A second answer finds no
// question waiting. A second run is declined the same way.
func TestAnswerQuestionThroughConsole(t *testing.T) {
	f, app := newQuestionFixture(t, mcp.ElicitParams{Message: "Which ward, please?", RequestedSchema: askedForm})
	id, run := f.askedRun(t, "req-console-q")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())

	resp, body := c.get("/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/items/`+id+`/question"`) {
		t.Fatalf("the inbox has no link to the question: %s\n%s", resp.Status, body)
	}
	resp, body = c.get("/items/" + id + "/question")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("question page: %s\n%s", resp.Status, body)
	}
	for _, want := range []string{
		"Which ward, please?",
		`<label for="field-4">Ward (required) <span class="type">string</span></label>`, `The ward the patient is in`,
		`<input type="text" id="field-4" name="field.ward"`,
		`<label for="field-0">Free beds <span class="type">integer</span></label>`, `<input type="number" step="1" id="field-0" name="field.beds"`,
		`<label for="field-3">Temperature <span class="type">number</span></label>`, `<input type="number" step="any" id="field-3" name="field.temp"`,
		`<label for="field-1">Isolate the patient <span class="type">boolean</span></label>`, `<select id="field-1" name="field.isolate"`,
		`<label for="field-2">Priority (required) <span class="type">string</span></label>`, `<option value="high">high</option>`,
		`name="action" value="accept"`, `name="action" value="decline"`, `name="action" value="cancel"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the question page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the page:\n%s", body)
	}

	good := url.Values{"action": {"accept"}, "person": {"ada"}, "field.ward": {"B-4"}, "field.beds": {"2"}, "field.temp": {"37.5"}, "field.isolate": {"true"}, "field.priority": {"high"}}
	before := f.snapshot(t)
	for _, bad := range []struct {
		what string
		form url.Values
		code blocking.Code
	}{
		{"an unknown field", with(good, "field.floor", "2"), blocking.QuestionAnswerInvalid},
		{"an integer of words", with(good, "field.beds", "many"), blocking.QuestionAnswerInvalid},
		{"a boolean of words", with(good, "field.isolate", "perhaps"), blocking.QuestionAnswerInvalid},
		{"a required field left empty", with(good, "field.ward", ""), blocking.QuestionAnswerInvalid},
		{"a value outside the enum", with(good, "field.priority", "urgent"), blocking.QuestionAnswerInvalid},
		{"no action", with(good, "action", ""), blocking.QuestionAnswerInvalid},
		{"an unknown person", with(good, "person", "mallory"), blocking.DecisionPersonUnknown},
	} {
		resp, body := c.post("/items/"+id+"/answer/prepare", bad.form)
		refused(t, bad.what, resp, body, http.StatusUnprocessableEntity, bad.code)
		resp, body = c.post("/items/"+id+"/answer", with(bad.form, "at", time.Now().UTC().Format(time.RFC3339), "signature", "x"))
		refused(t, bad.what+" (sent)", resp, body, http.StatusUnprocessableEntity, bad.code)
	}
	resp, body = c.post("/items/att-none/answer/prepare", good)
	refused(t, "no such item", resp, body, http.StatusUnprocessableEntity, blocking.AttentionUnknown)

	// Signed, but wrong: bob may only escalate; ada's statement signed
	// with bob's key; ada's signature over another answer.
	statement, at := c.prepareAnswer(id, with(good, "person", "bob"))
	resp, body = c.post("/items/"+id+"/answer", with(good, "person", "bob", "at", at, "signature", f.bob.sign(t, statement)))
	refused(t, "bob accepts", resp, body, http.StatusUnprocessableEntity, blocking.DecisionNotPermitted)
	statement, at = c.prepareAnswer(id, good)
	if !strings.Contains(statement, `"answer":"`+attention.AnswerDigest(attention.Answer{Action: "accept", Content: map[string]any{"ward": "B-4", "beds": 2, "temp": 37.5, "isolate": true, "priority": "high"}})+`"`) {
		t.Fatalf("the statement names no digest of the answer:\n%s", statement)
	}
	resp, body = c.post("/items/"+id+"/answer", with(good, "at", at, "signature", f.bob.sign(t, statement)))
	refused(t, "ada's statement signed by bob's key", resp, body, http.StatusUnprocessableEntity, blocking.DecisionSignatureInvalid)
	resp, body = c.post("/items/"+id+"/answer", with(good, "field.beds", "3", "at", at, "signature", f.ada.sign(t, statement)))
	refused(t, "ada's signature over another answer", resp, body, http.StatusUnprocessableEntity, blocking.DecisionSignatureInvalid)
	changedOnly(t, "after the refusals", before, f.snapshot(t))
	if got := app.answers(); len(got) != 0 {
		t.Fatalf("a refused answer reached the app: %+v", got)
	}

	resp, body = c.post("/items/"+id+"/answer", with(good, "at", at, "signature", f.ada.sign(t, statement)))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?decided="+id {
		t.Fatalf("ada's answer: %s\n%s", resp.Status, body)
	}
	res, err := f.c.GetRun(context.Background(), run, 30*time.Second)
	if err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: %v %+v", err, res)
	}
	got := app.answers()
	if len(got) != 1 || got[0].Action != "accept" || got[0].Content["ward"] != "B-4" || got[0].Content["beds"] != float64(2) || got[0].Content["temp"] != 37.5 || got[0].Content["isolate"] != true || got[0].Content["priority"] != "high" {
		t.Fatalf("the app got %+v", got)
	}
	stored := f.item(t, id)
	if stored.State != attention.Answered || stored.DecidedBy != "ada" || len(stored.Signed) != 1 || stored.Signed[0].Statement.Decision != contract.DecisionApprove {
		t.Fatalf("the item: %+v", stored)
	}
	if _, err := f.h.Policy.VerifyDecision(&stored.Signed[0], "clinic-triage"); err != nil {
		t.Fatalf("the kept answer does not verify: %v", err)
	}
	resp, body = c.post("/items/"+id+"/answer/prepare", good)
	refused(t, "a second answer", resp, body, http.StatusUnprocessableEntity, blocking.QuestionNotWaiting)

	// Decline: no fields are sent, whatever the form held.
	id2, run2 := f.askedRun(t, "req-console-q2")
	decline := with(good, "action", "decline")
	statement, at = c.prepareAnswer(id2, decline)
	resp, body = c.post("/items/"+id2+"/answer", with(decline, "at", at, "signature", f.ada.sign(t, statement)))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("ada's decline: %s\n%s", resp.Status, body)
	}
	if res, err := f.c.GetRun(context.Background(), run2, 30*time.Second); err != nil || res.Outcome == contract.OutcomeDone || res.Outcome == contract.OutcomeNeedsReview && res.Reason == contract.ReasonDownstreamQuestion {
		t.Fatalf("after the decline: %v %+v", err, res)
	}
	if got := app.answers(); len(got) != 2 || got[1].Action != "decline" || len(got[1].Content) != 0 {
		t.Fatalf("the app got %+v", got)
	}
	if it := f.item(t, id2); it.State != attention.Answered || it.AnswerAction != "decline" || it.Signed[0].Statement.Decision != contract.DecisionReject {
		t.Fatalf("the declined item: %+v", it)
	}
}

// TestAnswerURLQuestionThroughConsole: a question in URL mode shows its
// URL as text and never as a link; an accept with a field is refused and
// sends nothing; ada's signed accept reaches the app with no content.
func TestAnswerURLQuestionThroughConsole(t *testing.T) {
	const addr = "https://ward.example.com/sign-in?next=%2Fdesk"
	f, app := newQuestionFixture(t, mcp.ElicitParams{Mode: "url", Message: "Sign in to the ward desk.", URL: addr, ElicitationID: "e-1"})
	id, run := f.askedRun(t, "req-console-url")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	resp, body := c.get("/items/" + id + "/question")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<pre id="url" class="url" tabindex="0" aria-label="The address the app asks you to open">https://ward.example.com/sign-in?next=%2Fdesk</pre>`) {
		t.Fatalf("the URL is not shown as text: %s\n%s", resp.Status, body)
	}
	if strings.Contains(body, `href="https:`) || strings.Contains(body, "ward.example.com/sign-in\"") || strings.Contains(body, "<a href=\"https://ward") {
		t.Fatalf("the URL is a link:\n%s", body)
	}
	form := url.Values{"action": {"accept"}, "person": {"ada"}}
	resp, body = c.post("/items/"+id+"/answer/prepare", with(form, "field.code", "1234"))
	refused(t, "an accept with a field", resp, body, http.StatusUnprocessableEntity, blocking.QuestionAnswerInvalid)
	statement, at := c.prepareAnswer(id, form)
	resp, body = c.post("/items/"+id+"/answer", with(form, "at", at, "signature", f.ada.sign(t, statement)))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("ada's accept: %s\n%s", resp.Status, body)
	}
	if res, err := f.c.GetRun(context.Background(), run, 30*time.Second); err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: %v %+v", err, res)
	}
	if got := app.answers(); len(got) != 1 || got[0].Action != "accept" || len(got[0].Content) != 0 {
		t.Fatalf("the app got %+v", got)
	}
}

// TestQuestionPageOfApproval: an approval item has no app's question.
func TestQuestionPageOfApproval(t *testing.T) {
	f := newFixture(t)
	id := f.pause(t, "req-approval", "AB-1234")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	before := f.snapshot(t)
	resp, body := c.get("/items/" + id + "/question")
	refused(t, "an approval's question page", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	resp, body = c.post("/items/"+id+"/answer/prepare", url.Values{"action": {"accept"}, "person": {"ada"}})
	refused(t, "an approval answered", resp, body, http.StatusUnprocessableEntity, blocking.ConsoleRequestInvalid)
	changedOnly(t, "after the refusals", before, f.snapshot(t))
}
