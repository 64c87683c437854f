package auditcmd

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/coordinator"
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

// decidersByRun are the decisions on the host's attention items, by run:
// the signed ones by their statements, the others by their free-text
// name.
func decidersByRun(ctx context.Context, h *host.Host) (map[string][]Decider, error) {
	items, err := coordinator.AttentionRecords(h).Load(ctx, true)
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

// HistoryRun is one run as `oa runs` lists it: names, outcome, times,
// the receipt's digest and who decided; never an input or a record
// reference.
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

// historyFilter is what `oa runs` keeps.
type historyFilter struct {
	deployment, workflow, outcome, person, record string
	since, until                                  time.Time
}

// parseWhen reads a time flag: RFC 3339, or a date (midnight UTC).
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, cli.Usage(fmt.Errorf("--%s is a time as 2026-05-01T09:00:00Z or a date as 2026-05-01", flag))
}

// history lists the host's runs that f keeps, oldest first. A record
// reference is matched through its keyed fingerprint under the host
// secret (ledger.RecordRef): the reference itself is stored nowhere.
func history(ctx context.Context, h *host.Host, f historyFilter) ([]HistoryRun, error) {
	key, err := ledger.RunKey(h.Home)
	if err != nil {
		return nil, err
	}
	rows, err := ledger.StoreOf(h).Runs(ctx)
	if err != nil {
		return nil, err
	}
	deciders, err := decidersByRun(ctx, h)
	if err != nil {
		return nil, err
	}
	ref := ""
	if f.record != "" {
		ref = ledger.RecordRef(key, f.record)
	}
	out := []HistoryRun{}
	for i := range rows {
		r, err := ledger.DecodeRunRow(key, &rows[i])
		if err != nil {
			return nil, err
		}
		ds := deciders[r.RunID]
		switch {
		case f.deployment != "" && r.Deployment != f.deployment,
			f.workflow != "" && r.Workflow != f.workflow,
			f.outcome != "" && string(r.Outcome) != f.outcome,
			!f.since.IsZero() && r.CreatedAt.Before(f.since),
			!f.until.IsZero() && !r.CreatedAt.Before(f.until),
			ref != "" && !slices.Contains(r.RecordRefs, ref),
			f.person != "" && !slices.ContainsFunc(ds, func(d Decider) bool { return d.Person == f.person }):
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

func newRunsCmd() *cobra.Command {
	var f historyFilter
	var since, until, format string
	cmd := &cobra.Command{
		Use:   "runs [--workflow W] [--outcome O] [--person NAME] [--since T] [--until T] [--record REF] [--format table|json|csv]",
		Short: "Search this host's run history: by workflow, outcome, who decided, time and record reference",
		Long: `Runs lists this host's runs, oldest first, with their outcome and who
decided on them (the person and the key that signed, or a free-text name
marked unverified), filtered by deployment, workflow, outcome, the person
who decided, the time the run started (--since inclusive, --until
exclusive; RFC 3339 or a date) and a record reference. A record reference
is never stored: each run keeps keyed fingerprints of its inputs under the
host secret, and --record matches the fingerprint of the reference given,
so only this host can search by it. --format csv writes a compliance
export (one row a run, the deciders joined by "; ").`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.since, err = parseWhen("since", since); err != nil {
				return err
			}
			if f.until, err = parseWhen("until", until); err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				format = "json"
			}
			if !slices.Contains([]string{"table", "json", "csv"}, format) {
				return cli.Usage(errors.New("--format is table, json or csv"))
			}
			return cli.WithHost(cmd, func(h *host.Host) error {
				runs, err := history(cmd.Context(), h, f)
				if err != nil {
					return err
				}
				switch format {
				case "json":
					return cli.PrintJSON(cmd.OutOrStdout(), runs)
				case "csv":
					return writeHistoryCSV(cmd, runs)
				}
				out := cmd.OutOrStdout()
				if len(runs) == 0 {
					fmt.Fprintln(out, "no runs")
					return nil
				}
				fmt.Fprintf(out, "%-28s %-24s %-18s %-26s %-20s %s\n", "RUN", "WORKFLOW", "OUTCOME", "REASON", "STARTED", "DECIDED BY")
				for _, r := range runs {
					fmt.Fprintf(out, "%-28s %-24s %-18s %-26s %-20s %s\n", r.RunID, r.Workflow, r.Outcome, r.Reason, r.CreatedAt.Format(time.RFC3339), joinDeciders(r.DecidedBy))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&f.deployment, "deployment", "", "only runs of this deployment")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "only runs of this workflow")
	cmd.Flags().StringVar(&f.outcome, "outcome", "", "only runs with this outcome (done, did_not_run, needs_review, …)")
	cmd.Flags().StringVar(&f.person, "person", "", "only runs this person decided on")
	cmd.Flags().StringVar(&since, "since", "", "only runs started at or after this time (RFC 3339 or a date)")
	cmd.Flags().StringVar(&until, "until", "", "only runs started before this time (RFC 3339 or a date)")
	cmd.Flags().StringVar(&f.record, "record", "", "only runs whose inputs hold this record reference (matched by its keyed fingerprint)")
	cmd.Flags().StringVar(&format, "format", "table", "table, json or csv")
	return cmd
}

func joinDeciders(ds []Decider) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// writeHistoryCSV writes runs as CSV with a header row.
func writeHistoryCSV(cmd *cobra.Command, runs []HistoryRun) error {
	w := csv.NewWriter(cmd.OutOrStdout())
	_ = w.Write([]string{"run_id", "deployment", "workflow", "status", "outcome", "reason", "attempt", "started_at", "updated_at", "receipt", "decided_by", "decided_keys"})
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
		_ = w.Write([]string{r.RunID, r.Deployment, r.Workflow, r.Status, r.Outcome, r.Reason, strconv.Itoa(r.Attempt), r.CreatedAt.Format(time.RFC3339),
			r.UpdatedAt.Format(time.RFC3339), r.Receipt, strings.Join(people, "; "), strings.Join(keys, "; ")})
	}
	w.Flush()
	return w.Error()
}
