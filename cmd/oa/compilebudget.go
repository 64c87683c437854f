package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/oci"
)

// compileFlags are the budget of a compile and the IR size hosts accept,
// shared by `oa compile` and `oa push`.
type compileFlags struct {
	timeout    time.Duration
	memory     int64
	maxIRBytes int64
}

// register adds the flags to cmd, each name after prefix: `oa push` says
// "compile-", since its --timeout is the registry operation's.
func (f *compileFlags) register(cmd *cobra.Command, prefix string) {
	cmd.Flags().DurationVar(&f.timeout, prefix+"timeout", compiler.DefaultCompileTime, "how long compiling the bundle may take")
	cmd.Flags().Int64Var(&f.memory, prefix+"max-memory-bytes", compiler.DefaultCompileMemory, "how much memory compiling the bundle may use")
	cmd.Flags().Int64Var(&f.maxIRBytes, "max-ir-bytes", oci.DefaultIRBytes, "the largest IR to publish: hosts refuse a larger one unless their policy's limits.ir_bytes was raised")
}

// compile compiles dir within the budget and refuses IR larger than
// hosts accept.
func (f *compileFlags) compile(ctx context.Context, dir string) (*compiler.Result, error) {
	res, err := compiler.CompileWithin(ctx, dir, compiler.Budget{Time: f.timeout, Memory: f.memory})
	if err != nil {
		return nil, err
	}
	if err := f.checkIRSize(res.IR); err != nil {
		return nil, err
	}
	return res, nil
}

// checkIRSize refuses IR over --max-ir-bytes (by default, what every host
// accepts by default), before anything is written or pushed.
func (f *compileFlags) checkIRSize(b []byte) error {
	if int64(len(b)) > f.maxIRBytes {
		return blocking.New(blocking.IRTooLargeForHosts, "%d bytes, over %d (--max-ir-bytes)", len(b), f.maxIRBytes)
	}
	return nil
}
