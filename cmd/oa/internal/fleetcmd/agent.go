package fleetcmd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/fleet"
)

func newAgentCmd() *cobra.Command {
	agent := &cobra.Command{Use: "agent", Short: "Keep this host in step with its fleet"}
	var f provisionFlags
	var interval time.Duration
	var once bool
	sync := &cobra.Command{
		Use:   "sync --envelope REGISTRY/REPO:host-ID --interval D [--once]",
		Short: "Provision this host from its envelope now and every interval",
		Long: `Sync runs oa provision now and then every --interval until stopped: it
picks up new envelopes and the fleet's revocations (a revoked release is
revoked on this host, so a running coordinator refuses it at its next plan
check, and the host reports state revoked). A refusal or a registry outage
is printed and the next round tries again. With --once it runs one round
and exits with its status.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// fleet.Sync refuses a short interval too; here the refusal
			// names the flag, and --once needs none.
			if interval < fleet.MinSyncInterval && !once {
				return blocking.New(blocking.FleetIntervalInvalid, "--interval must be at least %s", fleet.MinSyncInterval)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cmd.SetContext(ctx)
			if once {
				res, err := f.provisionOnce(cmd)
				if res != nil {
					if perr := printProvisionResult(cmd, res); perr != nil {
						return perr
					}
				}
				return err
			}
			out := cmd.OutOrStdout()
			return fleet.Sync(ctx, cli.Home(), f.envelope, fleet.SyncOptions{ProvisionOptions: f.options(cmd), Interval: interval,
				Round: func(res *fleet.Result, err error) {
					switch {
					case res != nil && cli.WantJSON(cmd):
						_ = cli.PrintJSON(out, res)
					case res != nil:
						fmt.Fprintf(out, "%s ", time.Now().UTC().Format(time.RFC3339))
						printProvision(out, res)
					case err != nil:
						cli.PrintFailure(cmd.ErrOrStderr(), err, cli.WantJSON(cmd), cli.DebugFlag(cmd))
					}
				}})
		},
	}
	f.register(sync)
	sync.Flags().DurationVar(&interval, "interval", 0, "how often to sync, such as 30s or 5m")
	sync.Flags().BoolVar(&once, "once", false, "run one round and exit with its status")
	agent.AddCommand(sync)
	return agent
}
