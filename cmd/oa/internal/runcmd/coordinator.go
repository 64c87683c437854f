package runcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/telemetry"
)

func newCoordinatorCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "coordinator", Short: "Serve a bound deployment's governed tools over MCP stdio"}
	var deployment string
	var effectTimeout time.Duration
	var maxRuns int
	var client string
	var reg cli.RegistryFlags
	serve := &cobra.Command{
		Use:   "serve [--deployment NAME] [--client CLIENT]",
		Short: "Serve the deployment's governed tools to one MCP client over stdin and stdout",
		Long: `Serve speaks MCP over stdin and stdout to the one client that started it;
there is no network listener. At session start it checks the deployment's
binding, that the release is actively admitted and that the recomputed plan
is the bound one, then answers the client while it starts every connection
of the plan and compares its tool list with the verified one (a step waits
for its server; a server that fails the check is named on stderr and every
step that needs it is refused, as after a change mid-session); it checks the
plan again at the start of every run and before every step that reaches a
downstream server. A line
from the client that is not JSON-RPC 2.0 is answered with the JSON-RPC
error and the session goes on. A refusal at session start exits 2 with the blocking code on
stderr and nothing on stdout. stderr is the operator's channel: it names
which link of the plan changed; nothing of it reaches the client.

Without --deployment it serves the built-in demo package on the sandbox
connector (mode "sandbox"): a demo host under $OA_HOME/demo, prepared on
first use exactly as oa quickstart prepares one.

--client CLIENT (written into the server entry by oa harness install
--person) names the client installation served: an answer a person gives
in the client's form is signed with the key this host holds for that
installation, for the person the host policy names with it under
clients, and recorded as theirs "via client CLIENT".`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The downstream servers start and are checked while the client's
			// initialize is answered; a step waits for its server.
			opts := coordinator.Options{Home: cli.Home(), Deployment: deployment, Registry: reg.Options(), Operator: cmd.ErrOrStderr(), EffectTimeout: effectTimeout, MaxRuns: maxRuns, Mode: coordinator.ModeDeployment, ProbeInBackground: true, Client: client}
			if deployment == "" {
				home, err := sandboxHome(cmd)
				if err != nil {
					return err
				}
				opts.Home, opts.Deployment, opts.Mode = home, demo.Deployment, coordinator.ModeSandbox
			}
			// Traces and metrics go out only when the OTEL_* variables ask;
			// they are flushed when the session ends (EOF or a signal).
			tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceVersion: cli.Version()})
			if err != nil {
				return err
			}
			defer flushTelemetry(cmd, tel)
			c, err := coordinator.Open(ctx, opts)
			if err != nil {
				return err
			}
			// One ready line for a person who started it by hand; stdout
			// carries nothing but JSON-RPC.
			fmt.Fprintf(cmd.ErrOrStderr(), "oa coordinator: ready: deployment %s (mode %s), plan %s, %d tools; speaking MCP on stdin/stdout (end with Ctrl-D)\n", c.Deployment(), c.Mode(), c.PlanDigest(), len(c.ToolNames()))
			err = mcpserve.Serve(ctx, c, mcpserve.NewStdioTransport(os.Stdin, os.Stdout, cmd.ErrOrStderr()))
			if ctx.Err() == nil {
				c.ClientGone() // the session ended on the client's side, not by a signal
			}
			cerr := c.Close()
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
				return err
			}
			return cerr
		},
	}
	serve.Flags().StringVar(&deployment, "deployment", "", "the bound deployment to serve (none: the built-in demo package on the sandbox connector)")
	serve.Flags().DurationVar(&effectTimeout, "effect-timeout", 30*time.Second, "how long one downstream call may take before its server is ended (the effect is then unknown)")
	serve.Flags().StringVar(&client, "client", "", "the MCP client installation served (oa harness install --person writes it): its host-held key signs the answers given at the client")
	serve.Flags().IntVar(&maxRuns, "max-runs", coordinator.DefaultMaxRuns, "how many runs execute at once; more wait their turn (answered running until they end)")
	reg.Register(serve, "", "the bound release's registry")
	cmd.AddCommand(serve)
	return cmd
}

// telemetryFlush bounds how long the coordinator waits, when it ends, for
// the collector to take what is left.
const telemetryFlush = 5 * time.Second

// flushTelemetry flushes and stops telemetry export; a collector that
// cannot be reached is said on the operator's channel, never fatal.
func flushTelemetry(cmd *cobra.Command, tel *telemetry.Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlush)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "oa coordinator: telemetry: not everything was exported before the end (%s)\n", telemetry.Code(err))
	}
}

// sandboxHome returns the demo host under $OA_HOME, preparing it (as
// quickstart does) the first time; its progress goes to the operator.
// Coordinators starting together on a new $OA_HOME prepare it once.
func sandboxHome(cmd *cobra.Command) (string, error) {
	home := filepath.Join(cli.Home(), "demo")
	if !demo.Ready(home) {
		fmt.Fprintf(cmd.ErrOrStderr(), "oa coordinator: preparing the sandbox demo host in %s (or waiting for the process preparing it)\n", home)
	}
	_, err := demo.Ensure(cmd.Context(), home, cmd.ErrOrStderr())
	return home, err
}
