package runcmd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/console"
	"github.com/oa-dev/oa/host"
)

func newConsoleCmd() *cobra.Command {
	var opts console.Options
	var reg cli.RegistryFlags
	cmd := &cobra.Command{
		Use:   "console [--listen 127.0.0.1:PORT] [--tls-cert FILE --tls-key FILE] [--name NAME]",
		Short: "Serve this host's page: decide on paused runs, look back at runs, see the chain and connections",
		Long: `Console serves a local web page for this host ($OA_HOME): the Inbox of
paused runs (each with the exact change it proposes and the decisions it
allows), the run History (filters as oa runs, CSV export), a deployment's
Chain link by link, and the Connections.

It listens on loopback (--listen 127.0.0.1:0 picks a port) and prints a URL
with a single-use login token: open it once in your browser. Listening
beyond loopback needs --tls-cert and --tls-key, and --name for the names
people reach it by (console_listen_unsafe otherwise).

A decision is signed by the person deciding, with the key the host policy
names for them: the page shows the statement (as oa attention statement
prints it), you sign it with ssh-keygen -Y sign -n oa-decision (or cosign
sign-blob) and paste or upload the signature. The console holds no key.
End with Ctrl-C.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cli.WithHost(cmd, func(h *host.Host) error {
				opts.Host, opts.Registry, opts.Operator = h, reg.Options(), cmd.ErrOrStderr()
				srv, err := console.New(opts)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "oa console: host %s, open this URL once (its token works once):\n\n    %s\n\nEnd with Ctrl-C.\n", h.Policy.Host, srv.URL())
				return srv.Serve(ctx)
			})
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:0", "the address to listen on (port 0 picks one); beyond loopback it needs --tls-cert and --tls-key")
	cmd.Flags().StringVar(&opts.TLSCert, "tls-cert", "", "a PEM certificate (chain) to serve over TLS")
	cmd.Flags().StringVar(&opts.TLSKey, "tls-key", "", "the PEM private key of --tls-cert")
	cmd.Flags().StringSliceVar(&opts.Names, "name", nil, "a host name people reach the console by (the Host header it accepts), beside the address it listens on")
	reg.Register(cmd, "", "the bound releases' registry (the Chain page reads the release as oa bind inspect does)")
	return cmd
}
