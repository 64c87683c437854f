package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oa-dev/oa/contract"
)

// browser starts a headless chromium (Debian's package: apt-get install
// -y chromium) with a fresh profile and nothing that reaches the network
// on its own, or skips the test saying so when none is installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("SKIPPED: no chromium to drive (apt-get install -y chromium; .ci/run installs it): the console's pages were not tested in a browser")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	// The overall bound is a safety net for a hung browser, not a timed
	// assertion: every step waits for what it needs to see.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return bctx
}

// screenshot saves the page as docs/console/NAME.png when
// OA_CONSOLE_SCREENSHOTS=1 (so CI does not rewrite the docs).
func screenshot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if os.Getenv("OA_CONSOLE_SCREENSHOTS") != "1" {
			return nil
		}
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644)
	})
}

// unlabelled lists the page's controls that have no label: no <label>,
// no aria-label, and (for a button) no text.
const unlabelled = `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
 .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
 .map(e => e.outerHTML)`

// labelled holds that every control of the page has a label.
func labelled(t *testing.T, page string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		bad, err := chromedp.Evaluate[[]string](unlabelled)(ctx, target)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			t.Errorf("%s: controls without a label: %v", page, bad)
		}
		return nil
	})
}

// TestConsoleInBrowser, in a real headless chromium: log in with the
// printed token, see the paused run with the change it proposes, choose
// approve as ada with the keyboard alone, sign the statement the page
// shows (as ssh-keygen -Y sign would) and paste it, see the decision
// recorded; the agent asks again and the run ends done, which History
// shows with who decided and the receipt chain verifying; Chain shows
// every link holding; Connections shows the sandbox; and the inbox page
// says so when another run pauses (server-sent events). Every control
// on every page has a label.
func TestConsoleInBrowser(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t)
	id := f.pause(t, "browser", "AB-1234")

	must := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	read := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	must("log in and see the paused run",
		chromedp.Navigate(f.srv.URL()),
		chromedp.WaitVisible(chromedp.ID("item-"+id)),
		labelled(t, "inbox"),
		screenshot("inbox"),
	)
	text := read("the item", chromedp.Text(chromedp.ID("item-"+id)))
	for _, want := range []string{"append_triage_note", "records.note.append", "AB-1234", "exactly as they will be sent", "Purpose", "Done means"} {
		if !strings.Contains(text, want) {
			t.Errorf("the item does not show %q:\n%s", want, text)
		}
	}
	if location := read("the address", chromedp.Location()); strings.Contains(location, "token") {
		t.Errorf("after login the address is %s", location)
	}

	// The keyboard alone: focus the decision, choose, and press Enter on
	// the button.
	must("prepare the statement by keyboard",
		chromedp.Focus(chromedp.ID("decision-"+id)),
		chromedp.SetValue(chromedp.ID("decision-"+id), contract.DecisionApprove),
		chromedp.Focus(chromedp.ID("person-"+id)),
		chromedp.SetValue(chromedp.ID("person-"+id), "ada"),
		chromedp.Focus(chromedp.ID("prepare-"+id)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.ID("statement")),
		labelled(t, "sign"),
	)
	statement := strings.TrimSpace(read("the statement", chromedp.Text(chromedp.ID("statement")))) + "\n"
	must("paste ada's signature and record",
		chromedp.SetValue(chromedp.ID("signature"), f.ada.sign(t, statement)),
		screenshot("sign"),
		chromedp.Click(chromedp.ID("decide")),
		chromedp.WaitVisible(chromedp.ID("decided")),
		chromedp.WaitVisible(chromedp.ID("empty")),
	)
	if text := read("the notice", chromedp.Text(chromedp.ID("decided"))); !strings.Contains(text, "approved") || !strings.Contains(text, "ada") {
		t.Fatalf("recorded: %q", text)
	}

	res := f.run(t, "browser", "AB-1234")
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("the run after the approval: %+v", res)
	}

	must("History shows the run",
		chromedp.Navigate(f.srv.Origin()+"/history"),
		chromedp.WaitVisible(chromedp.ID("run-"+res.RunID)),
		labelled(t, "history"),
		screenshot("history"),
	)
	outcome := read("the outcome", chromedp.Text(chromedp.CSS("#run-"+res.RunID+" .outcome")))
	row := read("the row", chromedp.Text(chromedp.ID("run-"+res.RunID)))
	receipts := read("the receipts", chromedp.Text(chromedp.ID("receipts")))
	if outcome != "done" || !strings.Contains(row, "approve by ada") || !strings.Contains(receipts, "verifies") {
		t.Errorf("history: outcome %q, row %q, receipts %q", outcome, row, receipts)
	}
	if !strings.HasPrefix(receipts, "Receipts: the chain of 1 receipt verifies") {
		t.Errorf("history: the chain's count does not agree with its noun: %q", receipts)
	}
	if shown := read("the runs shown", chromedp.Text(chromedp.ID("shown"))); !strings.HasPrefix(shown, "1 run shown, newest first") {
		t.Errorf("history: the runs' count does not agree with its noun: %q", shown)
	}

	must("Chain is drawn",
		chromedp.Navigate(f.srv.Origin()+"/chain?deployment=clinic"),
		chromedp.WaitVisible(chromedp.ID("chain")),
		labelled(t, "chain"),
		screenshot("chain"),
	)
	text = read("the chain", chromedp.Text(chromedp.ID("chain")))
	for _, want := range []string{"artifact", "worker_ir", "publisher_signature", "conformance_attestations", "admission", "plan", "records.note.append", "binding", "receipts", "latest checkpoint"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chain does not show %q:\n%s", want, text)
		}
	}
	broken, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#chain li.broken, #chain li.unchecked').length`))
	if err != nil || broken != 0 {
		t.Errorf("%d links broken or unchecked (%v):\n%s", broken, err, text)
	}

	must("Connections lists the sandbox",
		chromedp.Navigate(f.srv.Origin()+"/connections"),
		chromedp.WaitVisible(chromedp.ID("conn-sandbox")),
		labelled(t, "connections"),
		screenshot("connections"),
	)

	// Live: the inbox page is told when a run pauses.
	must("open the inbox", chromedp.Navigate(f.srv.Origin()+"/"), chromedp.WaitVisible(chromedp.ID("empty")))
	f.pause(t, "browser-2", "CD-5678")
	must("the inbox says it changed", chromedp.WaitVisible(chromedp.ID("live")))
}
