package auditcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
)

// Bounds of `oa witness serve`'s HTTP server: a request's headers, the
// whole request, the answer, an idle connection.
const (
	witnessHeaderTimeout = 5 * time.Second
	witnessReadTimeout   = 10 * time.Second
	witnessWriteTimeout  = 10 * time.Second
	witnessIdleTimeout   = 60 * time.Second
	witnessMaxHeader     = 16 << 10
)

// newWitnessCmd is `oa witness`: serve a c2sp.org/tlog-witness, print
// its key (issue 41).
func newWitnessCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "witness", Short: "Run a transparency-log witness that cosigns hosts' checkpoints (c2sp.org/tlog-witness)"}
	var state, name, listen string
	var logKeys []string
	serve := &cobra.Command{
		Use:   "serve --log-key KEY... [--listen ADDR] [--state DIR] [--name NAME]",
		Short: "Serve c2sp.org/tlog-witness add-checkpoint over HTTP for the logs named",
		Long: `Serve runs a witness: POST /add-checkpoint (c2sp.org/tlog-witness) cosigns
a checkpoint of a log it knows (--log-key, repeated: the log's public key,
as oa receipts log-key prints it, or a file holding it) only when it is
signed by that log's key and a consistency proof shows it extends the last
checkpoint the witness cosigned of that log; its cosignature is a
c2sp.org/tlog-cosignature/v1. Its state is SQLite in --state (default
$OA_HOME/witness), with its Ed25519 key, made on first use named --name
(witness.key; the public key a host's policy names is witness.pub, and
oa witness key prints it).

It listens on --listen (default 127.0.0.1:7380, loopback: put it behind a
TLS proxy, or give an address, to serve others). Requests are bounded
(about 20 KiB, 10 s). Answers: 200 the cosignature; 400 a malformed
request or an old size above the checkpoint's; 403 not signed by the log's
key; 404 a log it does not know; 409 the old size is not the one it last
cosigned (the body is that size), or another root at that size; 422 the
consistency proof fails (a fork); 413 too large. Each request is one line
on stderr: the log, the size, the status and why. Ends on SIGINT or
SIGTERM.`,
		Args: cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(logKeys) == 0 {
				return cli.Usage(errors.New("give at least one --log-key: the logs this witness cosigns"))
			}
			var logs []note.Verifier
			for _, k := range logKeys {
				v, err := translog.ReadVerifierKey(k)
				if err != nil {
					return err
				}
				logs = append(logs, v)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errOut := cmd.ErrOrStderr()
			w, err := ledger.OpenWitness(ctx, witnessDir(state), name, logs, func(ev translog.WitnessEvent) {
				origin := ev.Origin
				if origin == "" {
					origin = "(unknown log)"
				}
				fmt.Fprintf(errOut, "oa witness: %s size %d: %d %s\n", origin, ev.Size, ev.Status, ev.Reason)
			})
			if err != nil {
				return err
			}
			defer w.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return cli.Usage(fmt.Errorf("--listen %s: cannot listen there", listen))
			}
			srv := &http.Server{
				Handler:           w.Handler,
				ReadHeaderTimeout: witnessHeaderTimeout,
				ReadTimeout:       witnessReadTimeout,
				WriteTimeout:      witnessWriteTimeout,
				IdleTimeout:       witnessIdleTimeout,
				MaxHeaderBytes:    witnessMaxHeader,
			}
			fmt.Fprintf(cmd.OutOrStdout(), "oa witness: %s serving %d logs on http://%s%s\nkey: %s\n", w.Name, len(logs), ln.Addr(), translog.AddCheckpointPath, w.VerifierKey)
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			shut, cancel := context.WithTimeout(context.Background(), witnessWriteTimeout)
			defer cancel()
			return srv.Shutdown(shut)
		},
	}
	serve.Flags().StringArrayVar(&logKeys, "log-key", nil, "a log's public key (NAME+HASH+BASE64) or a file holding it (repeat for each log)")
	serve.Flags().StringVar(&listen, "listen", "127.0.0.1:7380", "the address to listen on (loopback by default)")
	serve.Flags().StringVar(&state, "state", "", "the witness's state folder: its key and SQLite state (default $OA_HOME/witness)")
	serve.Flags().StringVar(&name, "name", "", "the witness's name, when its key is made (a signed-note name, e.g. witness.example.org); later, the key's")

	var keyState string
	key := &cobra.Command{
		Use:   "key [--state DIR]",
		Short: "Print the witness's public key (c2sp.org/tlog-cosignature), the line a host's policy names it by",
		Args:  cli.WantArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := translog.LoadWitnessKey(witnessDir(keyState), "")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), s.Verifier().String())
			return err
		},
	}
	key.Flags().StringVar(&keyState, "state", "", "the witness's state folder (default $OA_HOME/witness)")
	cmd.AddCommand(serve, key)
	return cmd
}

// witnessDir is the witness's state folder: dir, or $OA_HOME/witness.
func witnessDir(dir string) string {
	if dir != "" {
		return dir
	}
	return filepath.Join(cli.Home(), "witness")
}
