package console

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/ledger"
)

// MaxHistoryShown bounds the runs the History page lists (newest first);
// the CSV export holds every run the filter keeps.
const MaxHistoryShown = 500

// maxFilter bounds a filter field.
const maxFilter = 256

// historyPage is the History page.
type historyPage struct {
	Filter filterForm
	Runs   []coordinator.HistoryRun
	// Total is how many runs the filter keeps; Runs holds at most
	// MaxHistoryShown of them.
	Total int
	// Receipts is the receipt chain's check (incremental, as oa receipts
	// verify makes it).
	Receipts *ledger.ChainReport
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
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, blocking.New(blocking.ConsoleRequestInvalid, "%s: a time as 2026-05-01T09:00:00Z or a date as 2026-05-01", field).At("", field)
}

func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request, sess *session) {
	ff, f, err := readFilter(r)
	if err != nil {
		s.refuse(w, r, sess, http.StatusBadRequest, err)
		return
	}
	runs, err := coordinator.History(r.Context(), s.h, f)
	if err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	slices.Reverse(runs)
	page := historyPage{Filter: ff, Total: len(runs), Runs: runs[:min(len(runs), MaxHistoryShown)]}
	if page.Receipts, err = ledger.VerifyReceiptsWith(r.Context(), s.h, ledger.VerifyOptions{}); err != nil {
		s.refuse(w, r, sess, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, sess, http.StatusOK, "history", page)
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
