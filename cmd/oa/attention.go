package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
)

func newAttentionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "List paused runs and decide on them as a named person",
		Long: `Attention lists the runs paused for a person's decision on this host and
records the decision: approve lets the run continue when its caller asks
again with the same request_id and inputs, reject ends it with nothing
written, escalate leaves it stopped for the people it went to. The
operator can always decide here, whatever the MCP client can do.`,
	}
	var all bool
	list := &cobra.Command{
		Use:   "list [--all]",
		Short: "List open attention items (with --all, decided ones too)",
		Args:  wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withHost(cmd, func(h *host.Host) error {
				items, err := coordinator.ListAttention(cmd.Context(), h, all)
				if err != nil {
					return err
				}
				if items == nil {
					items = []coordinator.AttentionItem{}
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), items)
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
		Args:  wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withHost(cmd, func(h *host.Host) error {
				it, err := coordinator.GetAttention(cmd.Context(), h, args[0])
				if err != nil {
					return err
				}
				return printAttention(cmd, it)
			})
		},
	}
	cmd.AddCommand(list, show, newQuestionCmd(), newAnswerCmd())
	for _, d := range contract.Decisions {
		cmd.AddCommand(newDecisionCmd(d))
	}
	return cmd
}

var decisionShort = map[string]string{
	contract.DecisionApprove:  "Approve a paused step: the run continues when its caller asks again",
	contract.DecisionReject:   "Reject a paused step: the run ends with nothing written",
	contract.DecisionEscalate: "Escalate a paused step: the run stays stopped for others to decide",
}

func newDecisionCmd(decision string) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   decision + " ID --as NAME",
		Short: decisionShort[decision],
		Args:  wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withHost(cmd, func(h *host.Host) error {
				it, err := coordinator.DecideAttention(cmd.Context(), h, coordinator.Decision{AttentionID: args[0], Decision: decision, By: as, Channel: "cli"})
				if err != nil {
					return err
				}
				return printAttention(cmd, it)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the person deciding (recorded)")
	_ = cmd.MarkFlagRequired("as")
	return cmd
}

func printAttention(cmd *cobra.Command, it *coordinator.AttentionItem) error {
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), it)
	}
	printAttentionText(cmd.OutOrStdout(), it)
	return nil
}

func printAttentionText(out io.Writer, it *coordinator.AttentionItem) {
	fmt.Fprintf(out, "attention %s: %s\n  run        %s\n  workflow   %s\n  step       %s (%s, %s)\n  question   %s\n  created    %s\n",
		it.ID, it.State, it.RunID, it.Workflow, it.Step, it.Capability, it.Risk, it.Question, it.CreatedAt.Format(time.RFC3339))
	if it.DecidedAt != nil {
		fmt.Fprintf(out, "  decided    %s by %s via %s\n", it.DecidedAt.Format(time.RFC3339), it.DecidedBy, it.Channel)
	}
}
