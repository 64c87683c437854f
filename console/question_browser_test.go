package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
)

// TestAnswerQuestionInBrowser, in a real headless chromium: from the
// inbox, open the app's question, see its message and its form (every
// control labelled, each reached by Tab alone with focus shown, nothing
// overflowing at 200 % zoom), fill in its fields, accept, sign the
// statement the page shows (as ssh-keygen -Y sign would) and paste it:
// the answer is recorded, the app gets the fields typed as its form
// asks, and the run ends done.
func TestAnswerQuestionInBrowser(t *testing.T) {
	ctx := browser(t)
	f, app := newQuestionFixture(t, mcp.ElicitParams{Message: "Which ward, please?", RequestedSchema: askedForm})
	id, run := f.askedRun(t, "browser-q")
	must := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("log in and open the question",
		chromedp.Navigate(f.srv.URL()),
		chromedp.WaitVisible(chromedp.ID("question-"+id)),
		chromedp.Click(chromedp.ID("question-"+id)),
		chromedp.WaitVisible(chromedp.ID("message")),
		labelled(t, "question"),
		tabsReachAll(t, "question"),
	)
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("message")))
	if err != nil || msg != "Which ward, please?" {
		t.Fatalf("the message: %q %v", msg, err)
	}
	must("fill in the form and accept",
		chromedp.SetValue(chromedp.ID("field-4"), "B-4"),
		chromedp.SetValue(chromedp.ID("field-0"), "2"),
		chromedp.SetValue(chromedp.ID("field-3"), "37.5"),
		chromedp.SetValue(chromedp.ID("field-1"), "true"),
		chromedp.SetValue(chromedp.ID("field-2"), "high"),
		chromedp.SetValue(chromedp.ID("answer-person"), "ada"),
		screenshot("question"),
		chromedp.Click(chromedp.ID("accept")),
		chromedp.WaitVisible(chromedp.ID("statement")),
		labelled(t, "answer"),
		screenshot("answer"),
	)
	statement, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("statement")))
	if err != nil {
		t.Fatal(err)
	}
	must("paste ada's signature and send",
		chromedp.SetValue(chromedp.ID("signature"), f.ada.sign(t, strings.TrimSpace(statement)+"\n")),
		chromedp.Click(chromedp.ID("answer")),
		chromedp.WaitVisible(chromedp.ID("decided")),
	)
	res, err := f.c.GetRun(context.Background(), run, 30*time.Second)
	if err != nil || res.Outcome != contract.OutcomeDone {
		t.Fatalf("after the answer: %v %+v", err, res)
	}
	got := app.answers()
	if len(got) != 1 || got[0].Action != "accept" || got[0].Content["ward"] != "B-4" || got[0].Content["beds"] != float64(2) || got[0].Content["temp"] != 37.5 || got[0].Content["isolate"] != true || got[0].Content["priority"] != "high" {
		t.Fatalf("the app got %+v", got)
	}

	id2, _ := f.askedRun(t, "browser-q2")
	must("the question page at 200 %",
		chromedp.EmulateViewport(640, 450, chromedp.EmulateScale(2)),
		chromedp.Navigate(f.srv.Origin()+"/items/"+id2+"/question"),
		chromedp.WaitVisible(chromedp.ID("message")),
		fitsWidth(t, "question"),
	)
}
