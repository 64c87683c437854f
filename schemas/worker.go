package schemas

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
)

// CheckWorkerBytes checks IR bytes against #Worker. A refusal is a
// blocking.List with code ir_schema_violation, located by field path.
func CheckWorkerBytes(ctx *cue.Context, irBytes []byte) error {
	return checkWorker(ctx, ctx.CompileBytes(irBytes, cue.Filename("worker-ir.json")))
}

// CheckWorker checks a decoded IR against #Worker. It is CheckWorkerBytes
// for callers that hold the value: converting it is much cheaper than
// parsing its JSON again, and for IR that decoded canonically it checks
// the same.
func CheckWorker(ctx *cue.Context, w *ir.Worker) error {
	return checkWorker(ctx, ctx.Encode(w))
}

func checkWorker(ctx *cue.Context, v cue.Value) error {
	schema, err := Definition(ctx, WorkerIR)
	if err != nil {
		return err
	}
	if err := v.Err(); err != nil {
		return blocking.New(blocking.IRMalformed, "not JSON")
	}
	if err := schema.Unify(v).Validate(cue.Concrete(true)); err != nil {
		return CUERefusals(blocking.IRSchemaViolation, err, nil, nil)
	}
	return nil
}

// IRStep is how far CheckIR goes along its fixed sequence; each step
// includes the ones before it.
type IRStep int

const (
	// IRSchema is strict decoding and #Worker: enough to believe the IR's
	// names. It is what an artifact's fetch checks before anything is
	// derived from it; the invariants and the customer-state scan are
	// left to the stages after it and to conformance, which reports each
	// as a named check rather than refusing the fetch.
	IRSchema IRStep = iota + 1
	// IRValid adds ir.Validate's invariants: what oa inspect summarizes.
	IRValid
	// IRClean adds the customer-state scan (ir.ScanWorker): what oa push
	// publishes.
	IRClean
)

// IRCheck says how CheckIR checks IR bytes.
type IRCheck struct {
	// Canonical requires the bytes to be the IR's canonical encoding
	// (ir.DecodeCanonical), as every stored or pushed IR is, so that the
	// digest of the bytes is the digest of the value.
	Canonical bool
	// Through is the last step checked; zero means IRClean.
	Through IRStep
}

// CheckIR checks Worker IR that did not come from this process's compiler
// — a file, an artifact's layer — in one fixed order: strict decoding,
// #Worker, ir.Validate, the customer-state scan, stopping after
// c.Through. It returns the decoded IR, or the first failing step's
// refusal (ir_malformed, ir_schema_violation, an ir.Validate or a
// customer-state code, each located by field path). Every caller that
// takes foreign IR uses it, so a crafted IR is refused with the same code
// wherever it is presented.
func CheckIR(b []byte, c IRCheck) (*ir.Worker, error) {
	through := c.Through
	if through == 0 {
		through = IRClean
	}
	decode := ir.Decode
	if c.Canonical {
		decode = ir.DecodeCanonical
	}
	w, err := decode(b)
	if err != nil {
		return nil, err
	}
	if err := CheckWorker(cuecontext.New(), w); err != nil {
		return nil, err
	}
	if through >= IRValid {
		if err := ir.Err(ir.Validate(w)); err != nil {
			return nil, err
		}
	}
	if through >= IRClean {
		if err := ir.Err(ir.ScanWorker(w)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// CheckFetchedIR is the check every release read holds its IR layer to,
// passed to oci.Fetch and oci.FetchBound: the canonical encoding, strict
// decoding and #Worker (IRSchema), enough to believe the IR's names
// before anything is derived from them. The invariants and the
// customer-state scan are the later stages' and conformance's named
// checks, so a fetch stops at the schema. It lives here, not in oci, so
// that reading an artifact does not load CUE (issue 42).
func CheckFetchedIR(irBytes []byte) (*ir.Worker, error) {
	return CheckIR(irBytes, IRCheck{Canonical: true, Through: IRSchema})
}
