package pipeline

import (
	"context"
	"os"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/compiler"
	"github.com/oa-dev/oa/internal/boundedfile"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// MaxLocalIRBytes bounds a Worker IR file read from disk: the IR of the
// largest bundle the compiler accepts (compiler.MaxBundleBytes of text),
// with room for JSON escaping.
const MaxLocalIRBytes = 4 * compiler.MaxBundleBytes

// LoadOptions bound what Compile and LoadWorker produce.
type LoadOptions struct {
	// Budget is the time and memory compiling a bundle folder may take.
	Budget compiler.Budget
	// MaxIRBytes is the largest IR to publish (zero: oci.DefaultIRBytes,
	// what every host accepts by default): hosts refuse a larger IR layer
	// unless their policy raised limits.ir_bytes.
	MaxIRBytes int64
}

// maxIRBytes is MaxIRBytes or its default.
func (o LoadOptions) maxIRBytes() int64 {
	if o.MaxIRBytes > 0 {
		return o.MaxIRBytes
	}
	return oci.DefaultIRBytes
}

// CheckIRSize refuses IR larger than MaxIRBytes (ir_too_large_for_hosts),
// so a package no host would accept is refused before anything is written
// or pushed.
func (o LoadOptions) CheckIRSize(b []byte) error {
	if limit := o.maxIRBytes(); int64(len(b)) > limit {
		return blocking.New(blocking.IRTooLargeForHosts, "%d bytes, over %d", len(b), limit)
	}
	return nil
}

// Compile compiles the bundle folder dir within the budget (in a child
// process, compiler.CompileWithin) and refuses IR larger than hosts
// accept.
func Compile(ctx context.Context, dir string, opts LoadOptions) (*compiler.Result, error) {
	res, err := compiler.CompileWithin(ctx, dir, opts.Budget)
	if err != nil {
		return nil, err
	}
	if err := opts.CheckIRSize(res.IR); err != nil {
		return nil, err
	}
	return res, nil
}

// ReadIRFile reads a Worker IR file, a regular file of at most
// MaxLocalIRBytes; anything else is refused (ir_unreadable) at path.
func ReadIRFile(path string) ([]byte, error) {
	b, err := boundedfile.ReadRegular(path, MaxLocalIRBytes)
	if err != nil {
		return nil, blocking.New(blocking.IRUnreadable, "%s", err).At(path, "")
	}
	return b, nil
}

// LoadWorker is the worker a publisher publishes from path: a bundle
// folder compiled (Compile), or a Worker IR file read (ReadIRFile),
// checked as a host will check it (schemas.CheckIR through the
// customer-state scan: IR compiled elsewhere gets no easier path) and
// re-encoded canonically. It returns the worker and its canonical IR;
// either way IR larger than hosts accept is refused.
func LoadWorker(ctx context.Context, path string, opts LoadOptions) (*ir.Worker, []byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, blocking.New(blocking.BundleUnreadable, "neither a bundle folder nor an IR file can be read there")
	}
	if info.IsDir() {
		res, err := Compile(ctx, path, opts)
		if err != nil {
			return nil, nil, err
		}
		return res.Worker, res.IR, nil
	}
	b, err := ReadIRFile(path)
	if err != nil {
		return nil, nil, err
	}
	w, err := schemas.CheckIR(b, schemas.IRCheck{Through: schemas.IRClean})
	if err != nil {
		return nil, nil, err
	}
	canon, err := ir.Encode(w)
	if err != nil {
		return nil, nil, err
	}
	if err := opts.CheckIRSize(canon); err != nil {
		return nil, nil, err
	}
	return w, canon, nil
}
