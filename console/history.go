package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/ledger"
)

// HistoryPageSize is how many runs one History page lists (newest
// first); "Older runs" reads the next page from where it ended. The CSV
// export holds every run the filter keeps.
const HistoryPageSize = 100

// maxFilter bounds a filter field.
const maxFilter = 256

// historyPage is the History page.
type historyPage struct {
	Filter filterForm
	Runs   []historyRow
	// Next is the cursor of the next (older) page, 0 when none is left;
	// Capped says the page stopped at coordinator.MaxHistoryScan runs
	// read before it filled; Read is how many were read.
	Next   int64
	Capped bool
	Read   int
	// Receipts is the receipt chain's check (incremental, as oa receipts
	// verify makes it), made again when the log grew or on request.
	Receipts *ledger.ChainReport
	// CheckedAt is when that check was made.
	CheckedAt time.Time
}

// historyRow is one run as History lists it, with whether its own
// receipt verifies (ledger.ReceiptChecker).
type historyRow struct {
	coordinator.HistoryRun
	Verdict *ledger.RunReceipt
}

// filterForm is the filter as the form holds it.
type filterForm struct {
	Deployment, Workflow, Outcome, Person, Since, Until, Record string
}

// readFilter reads the history filter of a POST (a GET keeps every run):
// a record reference never travels in an address.
func readFilter(r *http.Request) (filterForm, coordinator.HistoryFilter, error) {
	var ff filterForm
	var f coordinator.HistoryFilter
	if r.Method != http.MethodPost {
		return ff, f, nil
	}

	fields := []struct {
		name string
		form *string
		to   *string
	}{
		{"deployment", &ff.Deployment, &f.Deployment}, {"workflow", &ff.Workflow, &f.Workflow}, {"outcome", &ff.Outcome, &f.Outcome},
		{"person", &ff.Person, &f.Person}, {"record", &ff.Record, &f.Record}, {"since", &ff.Since, nil}, {"until", &ff.Until, nil},
	}
	for _, fl := range fields {
		v := strings.TrimSpace(r.PostFormValue(fl.name))
		if len(v) > maxFilter {
			return ff, f, blocking.New(blocking.ConsoleRequestInvalid, "%s: over %d bytes", fl.name, maxFilter).At("", fl.name)
		}
		*fl.form = v
		if fl.to != nil {
			*fl.to = v
		}
	}
	var err error
	if f.Since, err = parseWhen("since", ff.Since); err != nil {
		return ff, f, err
	}
	if f.Until, err = parseWhen("until", ff.Until); err != nil {
		return ff, f, err
	}
	return ff, f, nil
}

// parseWhen reads a time field as `oa runs` does: RFC 3339, or a date
// (midnight UTC).
func parseWhen(field, v string) (time.Time, error) {
	if t, ok := coordinator.ParseHistoryTime(v); ok {
		return t, nil
	}
	return time.Time{}, blocking.New(blocking.ConsoleRequestInvalid, "%s: a time as 2026-05-01T09:00:00Z or a date as 2026-05-01", field).At("", field)
}

// readCursor reads the page's cursor ("before": the place in the store
// the page starts after), 0 for the newest.
func readCursor(r *http.Request) (int64, error) {
	v := r.FormValue("before")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, blocking.New(blocking.ConsoleRequestInvalid, "before: a page's place, as the Older runs button gives it").At("", "before")
	}
	return n, nil
}

// serveHistory is one page of the runs the filter keeps, newest first,
// read page by page from the store (coordinator.HistoryPageOf: its cost
// follows the page, not the history), each run's receipt checked on its
// own (ledger.ReceiptChecker), and the chain's verdict.
func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request, sess *session) {
	ff, f, err := readFilter(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusBadRequest, err)
		return
	}
	cursor, err := readCursor(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusBadRequest, err)
		return
	}
	ctx := r.Context()
	got, err := coordinator.HistoryPageOf(ctx, s.h, f, cursor, HistoryPageSize)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	page := historyPage{Filter: ff, Next: got.Next, Capped: got.Capped, Read: got.Read, Runs: make([]historyRow, len(got.Runs))}
	var checker *ledger.ReceiptChecker
	for i, run := range got.Runs {
		page.Runs[i].HistoryRun = run
		if run.ReceiptDigest == "" {
			continue
		}
		if checker == nil {
			if checker, err = ledger.Open(s.h).ReceiptChecker(ctx); err != nil {
				s.refuse(w, r, sess, http.StatusInternalServerError, err)
				return
			}
		}
		if page.Runs[i].Verdict, err = checker.VerifyRunReceipt(ctx, run.RunID, run.ReceiptDigest); err != nil {
			s.refuse(w, r, sess, http.StatusInternalServerError, err)
			return
		}
	}
	if page.Receipts, page.CheckedAt, err = s.chainVerdict(r); err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, sess, http.StatusOK, "history", page)
}

// chainVerdict is the receipt chain's check (ledger.VerifyReceiptsWith,
// incremental). A verdict that held is kept until the log grows or the
// page asks for a new check (recheck): the incremental check reads every
// receipt up to its mark, seconds on a host with a million runs, which
// a page of the history must not cost each time it is shown.
func (s *Server) chainVerdict(r *http.Request) (*ledger.ChainReport, time.Time, error) {
	ctx := r.Context()
	head, err := ledger.Open(s.h).LogHead(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	size := int64(-1)
	if head != nil {
		size = head.N
	}
	recheck := r.Method == http.MethodPost && r.PostFormValue("recheck") != ""
	s.mu.Lock()
	kept := s.verdict
	s.mu.Unlock()
	if kept != nil && kept.size == size && !recheck {
		return kept.report, kept.at, nil
	}
	report, err := ledger.Open(s.h).VerifyReceiptsWith(ctx, ledger.VerifyOptions{})
	if err != nil {
		return nil, time.Time{}, err
	}
	at := s.opts.Now().UTC()
	s.mu.Lock()
	if report.OK {
		s.verdict = &keptVerdict{size: size, report: report, at: at}
	} else {
		s.verdict = nil
	}
	s.mu.Unlock()
	return report, at, nil
}

// keptVerdict is a chain check that held, at the log's size then.
type keptVerdict struct {
	size   int64
	report *ledger.ChainReport
	at     time.Time
}

// serveHistoryCSV writes the runs the filter keeps as `oa runs --format
// csv` does, oldest first.
func (s *Server) serveHistoryCSV(w http.ResponseWriter, r *http.Request, sess *session) {
	_, f, err := readFilter(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusBadRequest, err)
		return
	}
	runs, err := coordinator.History(r.Context(), s.h, f)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="runs.csv"`)
	_ = coordinator.WriteHistoryCSV(w, runs)
}
