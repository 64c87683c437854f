package coordinator

import (
	"context"
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

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
	for _, it := range items {
		for _, sd := range it.Signed {
			s := sd.Statement
			out[it.RunID] = append(out[it.RunID], Decider{AttentionID: it.ID, Decision: s.Decision, Person: s.Person, Key: sd.Key, Via: s.Via, Verified: true, At: s.At})
		}
		if len(it.Signed) == 0 && it.DecidedBy != "" && it.DecidedAt != nil {
			out[it.RunID] = append(out[it.RunID], Decider{AttentionID: it.ID, Decision: it.State, Person: it.DecidedBy, At: *it.DecidedAt})
		}
	}
	return out, nil
}

// HistoryRun is one run as the run history lists it (`oa runs`, the
// console): names, outcome, times, the receipt's digest and who decided;
// never an input or a record reference.
type HistoryRun struct {
	RunID      string    `json:"runId"`
	Deployment string    `json:"deployment"`
	Workflow   string    `json:"workflow"`
	Status     string    `json:"status"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason"`
	Attempt    int       `json:"attempt"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Receipt    string    `json:"receipt,omitempty"`
	DecidedBy  []Decider `json:"decidedBy"`
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
	key, err := ledger.RunKey(h.Home)
	if err != nil {
		return nil, err
	}
	rows, err := ledger.StoreOf(h).Runs(ctx)
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
			Attempt: r.Attempt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Receipt: r.Receipt, DecidedBy: ds})
	}
	slices.SortStableFunc(out, func(a, b HistoryRun) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// WriteHistoryCSV writes runs as CSV with a header row, as `oa runs
// --format csv` does: one row a run, the deciders joined by "; ".
func WriteHistoryCSV(w io.Writer, runs []HistoryRun) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"run_id", "deployment", "workflow", "status", "outcome", "reason", "attempt", "started_at", "updated_at", "receipt", "decided_by", "decided_keys"})
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
			r.UpdatedAt.Format(time.RFC3339), r.Receipt, strings.Join(people, "; "), strings.Join(keys, "; ")})
	}
	cw.Flush()
	return cw.Error()
}
