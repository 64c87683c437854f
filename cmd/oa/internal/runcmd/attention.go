package runcmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
)

func newAttentionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "List paused runs and decide on them as a named person",
		Long: `Attention lists the runs paused for a person's decision on this host and
records the decision: approve lets the run continue when its caller asks
again with the same request_id and inputs, reject ends it with nothing
written, escalate leaves it stopped for the people it went to, skip lets
it continue without the step (only where the package declares the step
skippable, and only while the guard it names holds), and teach attaches
a signed request for a revised package version (audited, exported by
oa audit export) and leaves the run paused. The operator can always
decide here, whatever the MCP client can do.`,
	}
	var all bool
	list := &cobra.Command{
		Use:   "list [--all]",
		Short: "List open attention items (with --all, decided ones too)",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				items, err := coordinator.AttentionRecords(h).List(cmd.Context(), all)
				if err != nil {
					return err
				}
				if items == nil {
					items = []attention.Item{}
				}
				if cli.WantJSON(cmd) {
					return cli.PrintJSON(cmd.OutOrStdout(), items)
				}
				out := cmd.OutOrStdout()
				if len(items) == 0 {
					fmt.Fprintln(out, "no attention items")
					return nil
				}
				fmt.Fprintf(out, "%-28s %-10s %-24s %-16s %-24s %s\n", "ID", "STATE", "WORKFLOW", "STEP", "CAPABILITY", "CREATED")
				for _, it := range items {
					fmt.Fprintf(out, "%-28s %-10s %-24s %-16s %-24s %s\n", it.ID, it.State, it.Workflow, it.Step, it.Capability, it.CreatedAt.Format(time.RFC3339))
				}
				return nil
			})
		},
	}
	list.Flags().BoolVar(&all, "all", false, "list decided items too")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one attention item",
		Args:  cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				it, err := coordinator.AttentionRecords(h).Show(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				teach, err := coordinator.AttentionRecords(h).TeachRequestsFor(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if cli.WantJSON(cmd) {
					return cli.PrintJSON(cmd.OutOrStdout(), attentionShown{it, teach})
				}
				printAttentionText(cmd.OutOrStdout(), &it.Item)
				printProposed(cmd.OutOrStdout(), it)
				for _, t := range teach {
					fmt.Fprintf(cmd.OutOrStdout(), "  teach      %s by %s via %s:\n%s\n", t.Request.At.Format(time.RFC3339), t.Request.By, t.Request.Channel, indent(t.Request.Text))
				}
				return nil
			})
		},
	}
	cmd.AddCommand(list, show, newQuestionCmd(), newAnswerCmd(), newStatementCmd())
	for _, d := range contract.Decisions {
		cmd.AddCommand(newDecisionCmd(d))
	}
	return cmd
}

var decisionShort = map[string]string{
	contract.DecisionApprove:  "Approve a paused step: the run continues when its caller asks again",
	contract.DecisionReject:   "Reject a paused step: the run ends with nothing written",
	contract.DecisionEscalate: "Escalate a paused step: the run stays stopped for others to decide",
	contract.DecisionSkip:     "Skip a paused step the package declares skippable: the run continues without it when its caller asks again",
	contract.DecisionTeach:    "Ask for a revised package version (--text or --text-file): recorded, signed and audited; the run stays paused",
}

// attentionShown is an item as `oa attention show --json` prints it: with
// the change it proposes and its teach requests, which only the operator
// sees.
type attentionShown struct {
	*attention.Shown
	Teach []attention.SignedTeachRequest `json:"teach,omitempty"`
}

func indent(text string) string {
	return "    " + strings.ReplaceAll(text, "\n", "\n    ")
}

// teachText is the text of a teach decision: --text, or --text-file
// (- for stdin), read up to one byte over the limit so a longer text is
// refused as too long rather than cut.
func teachText(cmd *cobra.Command, text, file string) (string, error) {
	switch {
	case text != "" && file != "":
		return "", blocking.New(blocking.TeachTextInvalid, "give --text or --text-file, not both")
	case file == "":
		return text, nil
	}
	var r io.Reader = cmd.InOrStdin()
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, attention.MaxTeachText+1))
	return string(b), err
}

func printAttention(cmd *cobra.Command, it *attention.Item) error {
	if cli.WantJSON(cmd) {
		return cli.PrintJSON(cmd.OutOrStdout(), it)
	}
	printAttentionText(cmd.OutOrStdout(), it)
	return nil
}

func printAttentionText(out io.Writer, it *attention.Item) {
	fmt.Fprintf(out, "attention %s: %s\n  run        %s\n  workflow   %s\n  step       %s (%s, %s)\n  question   %s\n  created    %s\n",
		it.ID, it.State, it.RunID, it.Workflow, it.Step, it.Capability, it.Risk, it.Question, it.CreatedAt.Format(time.RFC3339))
	if it.DecidedAt != nil {
		fmt.Fprintf(out, "  decided    %s by %s via %s\n", it.DecidedAt.Format(time.RFC3339), decidedBy(it), it.Channel)
	}
}
