package fleetcmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/fleet"
	"github.com/oa-dev/oa/internal/plural"
)

func newFleetAuditCmd() *cobra.Command {
	var file, state string
	var stale time.Duration
	var quorum int
	var reg cli.RegistryFlags
	cmd := &cobra.Command{
		Use:   "audit --fleet FILE [--state DIR] [--stale D] [--quorum N]",
		Short: "Check every host's published receipts log against the checkpoint seen last",
		Long: `Audit reads each host's published log checkpoint (REGISTRY/REPO:log-ID,
which oa provision and oa agent sync push), verifies it (the document with the
host key the fleet file pins, else the key it carries and the auditor saw
first; the checkpoint with the host's log key, the one the auditor saw first)
and holds it to the checkpoint it saw last of that host, kept in --state
(default $OA_HOME/fleet-audit). It names every host that published nothing,
whose log forked (same size, another root, or a consistency proof from the
size seen that fails), rolled back (smaller), stopped publishing (older than
--stale) or lacks its witness quorum (its policy's, or --quorum when higher),
and exits 2 when any is named.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := fleet.LoadSpec(file)
			if err != nil {
				return err
			}
			if stale <= 0 {
				return blocking.New(blocking.FleetIntervalInvalid, "--stale must be positive")
			}
			if quorum < 0 {
				return blocking.New(blocking.FleetIntervalInvalid, "--quorum must not be negative")
			}
			if state == "" {
				state = filepath.Join(cli.Home(), "fleet-audit")
			}
			r, err := fleet.Audit(cmd.Context(), s, fleet.AuditOptions{Options: fleet.Options{OpenOptions: reg.Options()}, StateDir: state, Stale: stale, Quorum: quorum})
			if err != nil {
				return err
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSONResult(cmd.OutOrStdout(), r)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "  %-20s %-10s %-12s %-10s %-12s %s\n", "HOST", "SIZE", "COSIGNED", "SEEN", "SIGNED", "PROBLEMS")
			for _, h := range r.Hosts {
				flag, size, cosigned, seen := " ", "-", "-", "-"
				if h.Wrong() {
					flag = "!"
				}
				if h.PublishedAt != nil {
					size, cosigned, seen = fmt.Sprint(h.Size), fmt.Sprintf("%d/%d", len(h.Cosigners), h.Quorum), h.Consistency
				}
				var codes []string
				for _, p := range h.Problems {
					codes = append(codes, string(p.Code))
				}
				problems := strings.Join(codes, ",")
				if problems == "" {
					problems = "-"
				}
				fmt.Fprintf(out, "%s %-20s %-10s %-12s %-10s %-12s %s\n", flag, h.Host, size, cosigned, seen, h.Signed, problems)
			}
			fmt.Fprintf(out, "%s audited, %s wrong\n", plural.Count(len(r.Hosts), "host", "hosts"), plural.Count(len(r.Wrong), "host", "hosts"))
			return r.Err()
		},
	}
	cmd.Flags().StringVar(&file, "fleet", "", "the fleet file")
	cmd.Flags().StringVar(&state, "state", "", "the auditor's state folder (default $OA_HOME/fleet-audit)")
	cmd.Flags().DurationVar(&stale, "stale", fleet.DefaultAuditStale, "name a host whose published checkpoint is older than this")
	cmd.Flags().IntVar(&quorum, "quorum", 0, "the fewest witness cosignatures any host's checkpoint needs (each host's own quorum applies too)")
	reg.Register(cmd, "", "the fleet's registry")
	_ = cmd.MarkFlagRequired("fleet")
	return cmd
}
