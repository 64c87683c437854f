package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/testkit/coordtest"
)

var (
	runRow     = regexp.MustCompile(`<tr id="run-(run_[0-9a-f]+)">`)
	verifies   = regexp.MustCompile(`<span class="ok">verifies</span>`)
	olderField = regexp.MustCompile(`name="before" value="([0-9]+)"`)
)

// page reads one History page: its runs in order and the cursor of the
// next, "" on the last.
func page(t *testing.T, resp *http.Response, body string) (runs []string, next string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("history: %s\n%s", resp.Status, body)
	}
	for _, m := range runRow.FindAllStringSubmatch(body, -1) {
		runs = append(runs, m[1])
	}
	if m := olderField.FindStringSubmatch(body); m != nil {
		next = m[1]
	}
	return runs, next
}

// TestHistoryPagesAndChecksEachReceipt: on a host with 230 runs built in
// bulk and one decided in the console, History lists 100 runs a page,
// newest first, each run's own receipt verifying; Older runs pages on
// with nothing listed twice until every run was listed once; a filter
// pages the same way; a bad cursor is refused. A receipt edited in the
// database makes its own run's receipt not verify (the others still do),
// and asking for the chain to be checked again says the chain is broken.
func TestHistoryPagesAndChecksEachReceipt(t *testing.T) {
	f := newFixture(t)
	if err := coordtest.BuildHistory(context.Background(), f.Home, "clinic", 230); err != nil {
		t.Fatal(err)
	}
	id := f.pause(t, "history", "AB-1234")
	c := newClient(t, f.srv)
	c.login(f.srv.URL())
	c.decided("approve", f.ada, id, contract.DecisionApprove, "ada", "")
	res := f.run(t, "history", "AB-1234")
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("the decided run: %+v", res)
	}

	resp, body := c.get("/history")
	runs, next := page(t, resp, body)
	if len(runs) != 100 || runs[0] != res.RunID || next == "" {
		t.Fatalf("the first page: %d runs, first %v, next %q", len(runs), runs[:min(1, len(runs))], next)
	}
	if n := len(verifies.FindAllString(body, -1)); n != 100 || !strings.Contains(body, "the chain of 231 receipts verifies") {
		t.Fatalf("the first page: %d receipts verify\n%s", n, body)
	}
	seen := map[string]bool{}
	for pages := 1; ; pages++ {
		for _, r := range runs {
			if seen[r] {
				t.Fatalf("page %d lists %s again", pages, r)
			}
			seen[r] = true
		}
		if next == "" {
			break
		}
		resp, body = c.post("/history", url.Values{"before": {next}})
		runs, next = page(t, resp, body)
	}
	if len(seen) != 231 {
		t.Fatalf("the pages listed %d runs, want 231", len(seen))
	}
	resp, body = c.post("/history", url.Values{"person": {"ada"}})
	runs, next = page(t, resp, body)
	if len(runs) != 1 || runs[0] != res.RunID || next != "" {
		t.Fatalf("decided by ada: %v, next %q", runs, next)
	}
	resp, body = c.post("/history", url.Values{"before": {"the end"}})
	refused(t, "a bad cursor", resp, body, http.StatusBadRequest, blocking.ConsoleRequestInvalid)

	db := coordtest.RawDB(t, f.Home)
	coordtest.EditReceipt(t, db, 231, `"append_triage_note"`, `"append_triage_notx"`)
	db.Close()
	resp, body = c.get("/history")
	runs, _ = page(t, resp, body)
	row := body[strings.Index(body, `<tr id="run-`+res.RunID):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "does not verify") || !strings.Contains(row, string(blocking.ReceiptRunsDisagree)) {
		t.Errorf("the edited receipt's run: %s", row)
	}
	if n := len(verifies.FindAllString(body, -1)); n != len(runs)-1 {
		t.Errorf("%d of %d receipts verify, want all but the edited one", n, len(runs))
	}
	_, body = c.post("/history", url.Values{"recheck": {"1"}})
	if !strings.Contains(body, `id="receipts" class="broken"`) {
		t.Errorf("the chain checked again: %s", body[strings.Index(body, `id="receipts"`):][:300])
	}
}
