package console_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/oa-dev/oa/contract"
)

// markFocusable numbers every control a keyboard should reach on the
// page (shown, not disabled, not taken out of the tab order) and returns
// how many there are.
const markFocusable = `(() => {
 const all = Array.from(document.querySelectorAll('a[href], button:not([disabled]), input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'))
  .filter(e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden');
 all.forEach((e, i) => e.dataset.a11y = String(i));
 document.activeElement && document.activeElement.blur();
 return all.length;
})()`

// focused names the element focus is on: its number, or "" for none.
const focused = `(document.activeElement && document.activeElement.dataset.a11y) || ''`

// tabsReachAll holds that pressing Tab alone, from the top of the page,
// reaches every control markFocusable numbered, each in turn, and that
// focus is shown where it lands (an outline or a box shadow).
func tabsReachAll(t *testing.T, page string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		n, err := chromedp.Evaluate[int](markFocusable)(ctx, target)
		if err != nil {
			return err
		}
		reached := map[string]bool{}
		for range n + 2 {
			if _, err := chromedp.KeyEvent(kb.Tab)(ctx, target); err != nil {
				return err
			}
			id, err := chromedp.Evaluate[string](focused)(ctx, target)
			if err != nil {
				return err
			}
			if id == "" {
				continue
			}
			reached[id] = true
			shown, err := chromedp.Evaluate[bool](`(() => { const s = getComputedStyle(document.activeElement); return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none'; })()`)(ctx, target)
			if err != nil {
				return err
			}
			if !shown {
				html, _ := chromedp.Evaluate[string](`document.activeElement.outerHTML.slice(0, 120)`)(ctx, target)
				t.Errorf("%s: focus is not shown on %s", page, html)
			}
		}
		for i := range n {
			if !reached[fmt.Sprint(i)] {
				html, _ := chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('[data-a11y="%d"]').outerHTML.slice(0, 160)`, i))(ctx, target)
				t.Errorf("%s: the keyboard never reaches %s", page, html)
			}
		}
		if n == 0 {
			t.Errorf("%s: no control to reach", page)
		}
		return nil
	})
}

// fitsWidth holds that nothing on the page overflows the viewport
// horizontally: the page scrolls only down.
func fitsWidth(t *testing.T, page string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		over, err := chromedp.Evaluate[string](`(() => {
 const w = document.documentElement.clientWidth;
 if (document.documentElement.scrollWidth <= w) return '';
 const wide = Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > w + 1).slice(0, 3).map(e => e.outerHTML.slice(0, 100));
 return document.documentElement.scrollWidth + ' > ' + w + ': ' + wide.join(' | ');
})()`)(ctx, target)
		if err != nil {
			return err
		}
		if over != "" {
			t.Errorf("%s at 200 %% zoom overflows horizontally: %s", page, over)
		}
		return nil
	})
}

// TestConsoleAccessibleInBrowser, in a real headless chromium: on every
// page (the inbox with a paused run, the page that signs a decision,
// History, Chain, Connections) the Tab key alone reaches every control,
// with focus shown; and at 200 % zoom (the 1280-pixel window as a
// 640-pixel viewport at twice the pixel density) no page overflows
// horizontally.
func TestConsoleAccessibleInBrowser(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t)
	id := f.pause(t, "a11y", "AB-1234")
	must := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("log in", chromedp.Navigate(f.srv.URL()), chromedp.WaitVisible(chromedp.ID("item-"+id)))
	pages := []struct {
		name string
		open chromedp.Action[chromedp.Void]
		wait string
	}{
		{"inbox", chromedp.Navigate(f.srv.Origin() + "/"), "item-" + id},
		{"sign", chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			return chromedp.Do(ctx, chromedp.Navigate(f.srv.Origin()+"/"), chromedp.WaitVisible(chromedp.ID("prepare-"+id)),
				chromedp.SetValue(chromedp.ID("decision-"+id), contract.DecisionTeach), chromedp.Click(chromedp.ID("prepare-"+id)))
		}), "statement"},
		{"history", chromedp.Navigate(f.srv.Origin() + "/history"), "runs"},
		{"chain", chromedp.Navigate(f.srv.Origin() + "/chain?deployment=clinic"), "chain"},
		{"connections", chromedp.Navigate(f.srv.Origin() + "/connections"), "conn-sandbox"},
	}
	for _, p := range pages {
		must(p.name+" by keyboard", p.open, chromedp.WaitVisible(chromedp.ID(p.wait)), tabsReachAll(t, p.name))
	}
	must("zoom to 200 %", chromedp.EmulateViewport(640, 450, chromedp.EmulateScale(2)))
	for _, p := range pages {
		must(p.name+" at 200 %", p.open, chromedp.WaitVisible(chromedp.ID(p.wait)), fitsWidth(t, p.name))
	}
}
