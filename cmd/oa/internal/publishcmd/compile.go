package publishcmd

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/internal/atomicfile"
)

func newCompileCmd() *cobra.Command {
	var out string
	var budget compileFlags
	cmd := &cobra.Command{
		Use:   "compile DIR",
		Short: "Compile a bundle folder to canonical Worker IR and print its digest",
		Long: `Compile loads the bundle in DIR (.cue files of package worker and
skills/*.md), checks it against the embedded #Bundle schema, refuses customer
state, and writes canonical Worker IR (RFC 8785 JSON) to -o FILE, or to
DIR/worker.ir.json by default. It prints the workerIrDigest.

The compile runs in a child process held to --timeout and
--max-memory-bytes (compile_time_exceeded, compile_memory_exceeded), and IR
larger than hosts accept by default (limits.ir_bytes, 4 MiB) is refused
(ir_too_large_for_hosts) unless --max-ir-bytes says the hosts raised it.`,
		Args: cli.WantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := budget.compile(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(args[0], "worker.ir.json")
			}
			if out == "-" {
				_, err = cmd.OutOrStdout().Write(res.IR)
				return err
			}
			// A new file renamed over out: a link already there (say, a
			// worker.ir.json planted in a bundle folder) is replaced, never
			// written through.
			if err := atomicfile.Write(out, res.IR, 0o644); err != nil {
				return fmt.Errorf("writing IR: %w", err)
			}
			if cli.WantJSON(cmd) {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{
					"name": res.Worker.Name, "version": res.Worker.Version,
					"workerIrDigest": res.Digest, "bytes": len(res.IR), "output": out,
				})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", res.Digest)
			fmt.Fprintf(cmd.ErrOrStderr(), "compiled %s@%s to %s (%d bytes)\n", res.Worker.Name, res.Worker.Version, out, len(res.IR))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "where to write the IR (- for standard output)")
	budget.register(cmd, "")
	return cmd
}
