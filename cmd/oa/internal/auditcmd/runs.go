package auditcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
)

// Decider is one decision on a run as history shows it
// (coordinator.Decider).
type Decider = coordinator.Decider

// HistoryRun is one run as `oa runs` lists it (coordinator.HistoryRun).
type HistoryRun = coordinator.HistoryRun

// historyFilter is what `oa runs` keeps.
type historyFilter = coordinator.HistoryFilter

// decidersByRun are the decisions on the host's attention items, by run.
func decidersByRun(ctx context.Context, h *host.Host) (map[string][]Decider, error) {
	return coordinator.DecidersByRun(ctx, h)
}

// parseWhen reads a time flag: RFC 3339, or a date (midnight UTC).
func parseWhen(flag, v string) (time.Time, error) {
	if t, ok := coordinator.ParseHistoryTime(v); ok {
		return t, nil
	}
	return time.Time{}, cli.Usage(fmt.Errorf("--%s is a time as 2026-05-01T09:00:00Z or a date as 2026-05-01", flag))
}

// history lists the host's runs that f keeps, oldest first
// (coordinator.History).
func history(ctx context.Context, h *host.Host, f historyFilter) ([]HistoryRun, error) {
	return coordinator.History(ctx, h, f)
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
			if f.Since, err = parseWhen("since", since); err != nil {
				return err
			}
			if f.Until, err = parseWhen("until", until); err != nil {
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
	cmd.Flags().StringVar(&f.Deployment, "deployment", "", "only runs of this deployment")
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only runs of this workflow")
	cmd.Flags().StringVar(&f.Outcome, "outcome", "", "only runs with this outcome (done, did_not_run, needs_review, …)")
	cmd.Flags().StringVar(&f.Person, "person", "", "only runs this person decided on")
	cmd.Flags().StringVar(&since, "since", "", "only runs started at or after this time (RFC 3339 or a date)")
	cmd.Flags().StringVar(&until, "until", "", "only runs started before this time (RFC 3339 or a date)")
	cmd.Flags().StringVar(&f.Record, "record", "", "only runs whose inputs hold this record reference (matched by its keyed fingerprint)")
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

// writeHistoryCSV writes runs as CSV with a header row
// (coordinator.WriteHistoryCSV).
func writeHistoryCSV(cmd *cobra.Command, runs []HistoryRun) error {
	return coordinator.WriteHistoryCSV(cmd.OutOrStdout(), runs)
}
