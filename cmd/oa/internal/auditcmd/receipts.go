package auditcmd

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/plural"
	"github.com/oa-dev/oa/ledger"
)

func newReceiptsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "receipts", Short: "List and verify this host's chained run receipts"}
	var full bool
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check every receipt's signature and link; name the first broken link",
		Long: `Verify checks the whole receipt chain of this host: every record's
signature with the receipt key ($OA_HOME/keys/receipt.pub, which must be
the key the host-signed checkpoint pins), every sequence number and every
link to the receipt before; that the chain reaches the host's last signed
head checkpoint, both the one in the database and the copy in
$OA_HOME/receipts.checkpoint (so removed receipts or an emptied database
are caught); that every receipt names a host-signed binding with its plan;
and that runs (their host MACs checked) and receipts agree. Exit status 2
names the first broken link (receipt_chain_broken,
receipt_checkpoint_mismatch, receipt_key_unpinned,
receipt_binding_unverified, receipt_runs_disagree, run_record_tampered,
revocations_disagree).

By default it starts from the head the last successful verify reached
(recorded, with the host MAC, in $OA_HOME/receipts.verified): the heads,
the counts and the receipt it ended at are checked again, and everything
sealed or stored since in full. --full checks every receipt and run from
the first, on every core.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				r, err := ledger.Open(h).VerifyReceiptsWith(cmd.Context(), ledger.VerifyOptions{Full: full})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if cli.WantJSON(cmd) {
					if err := cli.PrintJSON(out, r); err != nil {
						return err
					}
				} else {
					printVerify(out, r)
				}
				return r.Err()
			})
		},
	}
	verify.Flags().BoolVar(&full, "full", false, "check every receipt and run from the first, not only what was sealed since the last verify")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the receipts in chain order (not verified: use receipts verify)",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WithHost(cmd, func(h *host.Host) error {
				if cli.WantJSON(cmd) {
					return listReceiptsJSON(cmd, h)
				}
				return listReceiptsTable(cmd, h)
			})
		},
	}
	cmd.AddCommand(verify, list)
	cmd.AddCommand(newLogCmds()...)
	return cmd
}

// listReceiptsJSON prints the receipts as one JSON array, written as they
// are read: a long history is never held whole.
func listReceiptsJSON(cmd *cobra.Command, h *host.Host) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	deciders, err := decidersByRun(cmd.Context(), h)
	if err != nil {
		return err
	}
	a := cli.NewJSONArray(out)
	if err := ledger.Open(h).EachReceipt(cmd.Context(), func(r ledger.ListedReceipt) error {
		return a.Add(listedReceipt{r, deciders[r.Record.RunID]})
	}); err != nil {
		return err
	}
	if err := a.Close(); err != nil {
		return err
	}
	return out.Flush()
}

// listReceiptsTable prints the receipts as a table, a line as each is read.
func listReceiptsTable(cmd *cobra.Command, h *host.Host) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	n := 0
	deciders, err := decidersByRun(cmd.Context(), h)
	if err != nil {
		return err
	}
	err = ledger.Open(h).EachReceipt(cmd.Context(), func(s ledger.ListedReceipt) error {
		if n == 0 {
			fmt.Fprintf(out, "%-5s %-28s %-24s %-18s %-26s %-20s %-71s %s\n", "SEQ", "RUN", "JOB", "OUTCOME", "REASON", "AT", "DIGEST", "DECIDED BY")
		}
		n++
		r := s.Record
		_, err := fmt.Fprintf(out, "%-5d %-28s %-24s %-18s %-26s %-20s %-71s %s\n", r.Seq, r.RunID, r.Job, r.Outcome, r.Reason, r.At.Format(time.RFC3339), s.Digest, orDash(joinDeciders(deciders[r.RunID])))
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(out, "no receipts")
	}
	return out.Flush()
}

// printVerify shows a verify's outcome in one line.
func printVerify(out io.Writer, r *ledger.ChainReport) {
	switch {
	case r.OK:
		fmt.Fprintf(out, "receipt chain ok: %s", plural.Count(r.Receipts, "receipt", "receipts"))
		if r.Head != "" {
			fmt.Fprintf(out, ", head %s", r.Head)
		}
		if r.Incremental {
			fmt.Fprintf(out, " (%d checked since the last verify; --full checks all)", r.Verified)
		}
		fmt.Fprintln(out)
	case r.FirstBroken > 0:
		fmt.Fprintf(out, "receipt chain BROKEN at receipt #%d of %d (%s): %s\n", r.FirstBroken, r.Receipts, r.Code, r.Problem)
	default:
		fmt.Fprintf(out, "receipt chain BROKEN (%s): %s\n", r.Code, r.Problem)
	}
}

// listedReceipt is a receipt as `oa receipts list --json` prints it: with
// who decided on its run (from the signed decisions kept with the run's
// attention items; the receipt itself is unchanged).
type listedReceipt struct {
	ledger.ListedReceipt
	DecidedBy []Decider `json:"decidedBy,omitempty"`
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
