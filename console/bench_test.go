package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/testkit/coordtest"
)

// BenchmarkInboxRender is the inbox's server time (read, open each
// proposed change, render) on a host with many decided items and one
// open: OA_CONSOLE_BENCH_ITEMS runs (10,000 unless set), each with a
// decided attention item, written in bulk (coordtest.BuildHistory, then
// one item a run). The inbox reads only the open items (the store's
// attention_open index), so the figure should not grow with the decided.
func BenchmarkInboxRender(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("OA_CONSOLE_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	f := newFixture(b)
	id := f.pause(b, "bench", "AB-1234")
	if err := coordtest.BuildHistory(context.Background(), f.Home, "clinic", n); err != nil {
		b.Fatal(err)
	}
	db := coordtest.RawDB(b, f.Home)
	coordtest.Exec(b, db, `INSERT INTO attention (id, run_id, state)
		SELECT 'att_b' || substr(run_id, 5), run_id, CAST(json_object('attention_id', 'att_b' || substr(run_id, 5), 'run_id', run_id, 'workflow', 'append_triage_note',
			'step', 'append_note', 'capability', 'records.note.append', 'risk', 'consequential', 'state', 'approved', 'question', 'Approve?',
			'decided_by', 'ada', 'channel', 'cli', 'created_at', '2026-01-01T00:00:00Z', 'decided_at', '2026-01-01T00:01:00Z',
			'outcome', 'needs_review', 'deployment', 'clinic') AS BLOB)
		FROM runs WHERE run_id NOT IN (SELECT run_id FROM attention)`)
	db.Close()
	c := newClient(b, f.srv)
	c.login(f.srv.URL())
	h := f.srv.Handler()
	req := httptest.NewRequest(http.MethodGet, f.srv.Origin()+"/", nil)
	for _, ck := range c.c.Jar.Cookies(req.URL) {
		req.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), id) {
		b.Fatalf("inbox: %d", w.Code)
	}
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("inbox: %d", w.Code)
		}
	}
}

// BenchmarkHistoryRender is the History page's server time (one page of
// HistoryPageSize runs read newest first from the store, each run's own
// receipt checked with its inclusion proof, the chain's verdict kept
// from the first render, the page rendered) on a host with
// OA_CONSOLE_BENCH_ITEMS runs (10,000 unless set), built in bulk
// (coordtest.BuildHistory) and then one run decided and sealed, which
// puts every receipt in the host's log. The first render checks the
// chain (incremental verify, in full the first time) and is logged, not
// timed; the page reads only its own runs, so the figure should not grow
// with the history.
func BenchmarkHistoryRender(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("OA_CONSOLE_BENCH_ITEMS")); err == nil && v > 0 {
		n = v
	}
	f := newFixture(b)
	if err := coordtest.BuildHistory(context.Background(), f.Home, "clinic", n); err != nil {
		b.Fatal(err)
	}
	id := f.pause(b, "bench", "AB-1234")
	c := newClient(b, f.srv)
	c.login(f.srv.URL())
	c.decided("approve", f.ada, id, "approve", "ada", "")
	f.run(b, "bench", "AB-1234")
	h := f.srv.Handler()
	req := httptest.NewRequest(http.MethodGet, f.srv.Origin()+"/history", nil)
	for _, ck := range c.c.Jar.Cookies(req.URL) {
		req.AddCookie(ck)
	}
	start := time.Now()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || strings.Count(w.Body.String(), `<span class="ok">verifies</span>`) != console.HistoryPageSize {
		b.Fatalf("history: %d", w.Code)
	}
	b.Logf("%d runs: the first render, with the chain check, took %s", n+1, time.Since(start))
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("history: %d", w.Code)
		}
	}
}
