package publishcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/cmd/oa/internal/cli"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/pipeline"
)

// compileFlags are the budget of a compile and the IR size hosts accept,
// shared by `oa compile` and `oa push`.
type compileFlags struct {
	timeout    time.Duration
	memory     int64
	maxIRBytes int64
	prefix     string // of the budget flags' names
}

// register adds the flags to cmd, each name after prefix: `oa push` says
// "compile-", since its --timeout is the registry operation's.
func (f *compileFlags) register(cmd *cobra.Command, prefix string) {
	f.prefix = prefix
	cmd.Flags().DurationVar(&f.timeout, prefix+"timeout", compiler.DefaultCompileTime, "how long compiling the bundle may take")
	cmd.Flags().Int64Var(&f.memory, prefix+"max-memory-bytes", compiler.DefaultCompileMemory, "how much memory compiling the bundle may use")
	cmd.Flags().Int64Var(&f.maxIRBytes, "max-ir-bytes", oci.DefaultIRBytes, "the largest IR to publish: hosts refuse a larger one unless their policy's limits.ir_bytes was raised")
}

// options are the load options the flags say; a bound that is zero or
// negative is a mistake on the command line, never "no bound".
func (f *compileFlags) options() (pipeline.LoadOptions, error) {
	switch {
	case f.timeout <= 0:
		return pipeline.LoadOptions{}, cli.Usage(fmt.Errorf("--%stimeout must be a positive duration, got %s", f.prefix, f.timeout))
	case f.memory <= 0:
		return pipeline.LoadOptions{}, cli.Usage(fmt.Errorf("--%smax-memory-bytes must be a positive number of bytes, got %d", f.prefix, f.memory))
	case f.maxIRBytes <= 0:
		return pipeline.LoadOptions{}, cli.Usage(fmt.Errorf("--max-ir-bytes must be a positive number of bytes, got %d", f.maxIRBytes))
	}
	return pipeline.LoadOptions{Budget: compiler.Budget{Time: f.timeout, Memory: f.memory}, MaxIRBytes: f.maxIRBytes}, nil
}

// compile compiles dir within the budget and refuses IR larger than
// hosts accept (pipeline.Compile).
func (f *compileFlags) compile(ctx context.Context, dir string) (*compiler.Result, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	res, err := pipeline.Compile(ctx, dir, opts)
	return res, namingFlag(err)
}

// loadWorker compiles a bundle folder or reads and checks an IR file
// (pipeline.LoadWorker: what push publishes).
func (f *compileFlags) loadWorker(ctx context.Context, path string) (*ir.Worker, []byte, error) {
	opts, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	w, b, err := pipeline.LoadWorker(ctx, path, opts)
	return w, b, namingFlag(err)
}

// namingFlag names --max-ir-bytes in a size refusal: on the command line
// it is the limit the publisher turns.
func namingFlag(err error) error {
	for _, r := range blocking.Refusals(err) {
		if r.Code == blocking.IRTooLargeForHosts {
			r.Detail += " (--max-ir-bytes)"
		}
	}
	return err
}
