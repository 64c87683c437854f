package coordinator

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
)

// Decider is one decision on a run as history shows it: who, by which
// key, through which client, and when. A decision made with a free-text
// name (a host whose policy names no persons) has no key and is marked
// unverified.
type Decider struct {
	AttentionID string    `json:"attentionId"`
	Decision    string    `json:"decision"`
	Person      string    `json:"person"`
	Key         string    `json:"key,omitempty"`
	Via         string    `json:"via,omitempty"`
	Verified    bool      `json:"verified"`
	At          time.Time `json:"at"`
}

// String names the decider for people.
func (d Decider) String() string {
	s := d.Decision + " by " + d.Person
	switch {
	case !d.Verified:
		s += " (free text, unverified)"
	case d.Via != "":
		s += " (" + d.Key + " via client " + d.Via + ")"
	default:
		s += " (" + d.Key + ")"
	}
	return s
}

// DecidersByRun are the decisions on the host's attention items, by run:
// the signed ones by their statements, the others by their free-text
// name.
func DecidersByRun(ctx context.Context, h *host.Host) (map[string][]Decider, error) {
	items, err := AttentionRecords(h).Load(ctx, true)
	if err != nil {
		return nil, err
	}
	out := map[string][]Decider{}
	for i := range items {
		out[items[i].RunID] = append(out[items[i].RunID], decidersOf(&items[i])...)
	}
	return out, nil
}

// decidersOf are the decisions on item it: the signed ones by their
// statements, the others by their free-text name.
func decidersOf(it *attention.Stored) []Decider {
	var out []Decider
	for _, sd := range it.Signed {
		s := sd.Statement
		out = append(out, Decider{AttentionID: it.ID, Decision: s.Decision, Person: s.Person, Key: sd.Key, Via: s.Via, Verified: true, At: s.At})
	}
	if len(it.Signed) == 0 && it.DecidedBy != "" && it.DecidedAt != nil {
		out = append(out, Decider{AttentionID: it.ID, Decision: it.State, Person: it.DecidedBy, At: *it.DecidedAt})
	}
	return out
}

// HistoryRun is one run as the run history lists it (`oa runs`, the
// console): names, outcome, times, the receipt's digest and who decided;
// never an input or a record reference.
type HistoryRun struct {
	RunID         string    `json:"runId"`
	Deployment    string    `json:"deployment"`
	Workflow      string    `json:"workflow"`
	Status        string    `json:"status"`
	Outcome       string    `json:"outcome"`
	Reason        string    `json:"reason"`
	Attempt       int       `json:"attempt"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	ReceiptDigest string    `json:"receiptDigest,omitempty"`
	DecidedBy     []Decider `json:"decidedBy"`
}

// ParseHistoryTime reads a history filter's time as `oa runs` and the
// console take it: RFC 3339, or a date (midnight UTC). An empty v is the
// zero time (no bound); false when v is neither.
func ParseHistoryTime(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, true
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// HistoryFilter is what a search of the run history keeps: every field
// given must match. Record is a record reference, matched through its
// keyed fingerprint (ledger.RecordRef), never stored.
type HistoryFilter struct {
	Deployment, Workflow, Outcome, Person, Record string
	// Since is inclusive, Until exclusive; zero is unbounded.
	Since, Until time.Time
}

// History lists the host's runs that f keeps, oldest first. A record
// reference is matched through its keyed fingerprint under the host
// secret (ledger.RecordRef): the reference itself is stored nowhere.
func History(ctx context.Context, h *host.Host, f HistoryFilter) ([]HistoryRun, error) {
	l := ledger.Open(h)
	key, err := l.Secret()
	if err != nil {
		return nil, err
	}
	rows, err := l.Tables().Runs(ctx)
	if err != nil {
		return nil, err
	}
	deciders, err := DecidersByRun(ctx, h)
	if err != nil {
		return nil, err
	}
	ref := ""
	if f.Record != "" {
		ref = ledger.RecordRef(key, f.Record)
	}
	out := []HistoryRun{}
	for i := range rows {
		r, err := ledger.DecodeRunRow(key, &rows[i])
		if err != nil {
			return nil, err
		}
		ds := deciders[r.RunID]
		switch {
		case f.Deployment != "" && r.Deployment != f.Deployment,
			f.Workflow != "" && r.Workflow != f.Workflow,
			f.Outcome != "" && string(r.Outcome) != f.Outcome,
			!f.Since.IsZero() && r.CreatedAt.Before(f.Since),
			!f.Until.IsZero() && !r.CreatedAt.Before(f.Until),
			ref != "" && !slices.Contains(r.RecordRefs, ref),
			f.Person != "" && !slices.ContainsFunc(ds, func(d Decider) bool { return d.Person == f.Person }):
			continue
		}
		if ds == nil {
			ds = []Decider{}
		}
		out = append(out, HistoryRun{RunID: r.RunID, Deployment: r.Deployment, Workflow: r.Workflow, Status: r.Status, Outcome: string(r.Outcome), Reason: string(r.Reason),
			Attempt: r.Attempt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ReceiptDigest: r.Receipt, DecidedBy: ds})
	}
	slices.SortStableFunc(out, func(a, b HistoryRun) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// MaxHistoryScan bounds the runs one page of the history reads: a filter
// that keeps few runs of a long history gives a page short of its limit,
// with the cursor to read on from, rather than reading every run.
const MaxHistoryScan = 20_000

// HistoryPage is one page of the run history, newest first.
type HistoryPage struct {
	// Runs are the runs the filter keeps, newest first, at most the
	// page's limit; Cursors[i] is Runs[i]'s place in the store.
	Runs    []HistoryRun
	Cursors []int64
	// Next is the cursor the next (older) page reads from; 0 when no
	// older run is left to read.
	Next int64
	// Read is how many runs were read for the page; Capped says the page
	// stopped at MaxHistoryScan before it filled.
	Read   int
	Capped bool
}

// HistoryPageOf is one page of the host's runs that f keeps, newest
// first: at most limit runs stored before cursor (0: from the newest),
// as History filters them. It reads the runs newest first through the
// store's rowid (and the deployment's index when f names one), decoding
// only the rows it reads and each kept run's own attention items, and
// stops when the page is full or MaxHistoryScan runs were read: its time
// and memory follow the page, not the host's history.
func HistoryPageOf(ctx context.Context, h *host.Host, f HistoryFilter, cursor int64, limit int) (*HistoryPage, error) {
	if limit <= 0 {
		limit = 1
	}
	st := ledger.Open(h)
	key, err := st.Secret()
	if err != nil {
		return nil, err
	}
	ref := ""
	if f.Record != "" {
		ref = ledger.RecordRef(key, f.Record)
	}
	page := &HistoryPage{Runs: []HistoryRun{}}
	full := false
	last, read, err := st.RunsBefore(ctx, f.Deployment, cursor, MaxHistoryScan, func(at int64, row *ledger.RunRow) (bool, error) {
		r, err := ledger.DecodeRunRow(key, row)
		if err != nil {
			return false, err
		}
		switch {
		case f.Workflow != "" && r.Workflow != f.Workflow,
			f.Outcome != "" && string(r.Outcome) != f.Outcome,
			!f.Since.IsZero() && r.CreatedAt.Before(f.Since),
			!f.Until.IsZero() && !r.CreatedAt.Before(f.Until),
			ref != "" && !slices.Contains(r.RecordRefs, ref):
			return true, nil
		}
		rows, err := st.AttentionOfRun(ctx, r.RunID)
		if err != nil {
			return false, err
		}
		ds := []Decider{}
		for _, row := range rows {
			var it attention.Stored
			if err := json.Unmarshal(row.State, &it); err != nil {
				return false, err
			}
			ds = append(ds, decidersOf(&it)...)
		}
		if f.Person != "" && !slices.ContainsFunc(ds, func(d Decider) bool { return d.Person == f.Person }) {
			return true, nil
		}
		if len(page.Runs) == limit {
			full = true // one more kept: there is an older page
			return false, nil
		}
		page.Runs = append(page.Runs, HistoryRun{RunID: r.RunID, Deployment: r.Deployment, Workflow: r.Workflow, Status: r.Status, Outcome: string(r.Outcome), Reason: string(r.Reason),
			Attempt: r.Attempt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ReceiptDigest: r.Receipt, DecidedBy: ds})
		page.Cursors = append(page.Cursors, at)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	page.Read = read
	switch {
	case full:
		page.Next = page.Cursors[len(page.Cursors)-1]
	case read == MaxHistoryScan:
		page.Next, page.Capped = last, true
	}
	return page, nil
}

// WriteHistoryCSV writes runs as CSV with a header row, as `oa runs
// --format csv` does: one row a run, the deciders joined by "; ".
func WriteHistoryCSV(w io.Writer, runs []HistoryRun) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"run_id", "deployment", "workflow", "status", "outcome", "reason", "attempt", "started_at", "updated_at", "receipt_digest", "decided_by", "decided_keys"})
	for _, r := range runs {
		var people, keys []string
		for _, d := range r.DecidedBy {
			people = append(people, d.Decision+" by "+d.Person)
			k := d.Key
			if !d.Verified {
				k = "unverified"
			}
			keys = append(keys, k)
		}
		_ = cw.Write([]string{r.RunID, r.Deployment, r.Workflow, r.Status, r.Outcome, r.Reason, strconv.Itoa(r.Attempt), r.CreatedAt.Format(time.RFC3339),
			r.UpdatedAt.Format(time.RFC3339), r.ReceiptDigest, strings.Join(people, "; "), strings.Join(keys, "; ")})
	}
	cw.Flush()
	return cw.Error()
}
