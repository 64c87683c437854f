package coordinator

import (
	"context"
	"errors"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/telemetry"
)

// The coordinator's few hooks into package telemetry live in the engine
// (StartRun, StartStep, StartPlanCheck, StartSeal) and the server
// (StartSession, FromMeta, Refused); these helpers turn the engine's
// results into the closed codes the spans carry.

// endRun ends a run attempt's span with the run's outcome and reason as
// stored once the attempt stopped (paused, terminal, or left to another).
func (eng *engine) endRun(span *telemetry.Run, runID string) {
	outcome, reason := "unknown", "unknown"
	if !telemetry.Active() {
		span.Finish(outcome, reason) // the API's no-op: not worth a read
		return
	}
	if r, err := eng.read(context.Background(), runID); err == nil {
		outcome, reason = string(r.Outcome), string(r.Reason)
	}
	span.Finish(outcome, reason)
}

// stepCode is a read or check step's code: its closed reason, or the
// fault's code.
func stepCode(reason contract.Reason, err error) string {
	if err != nil {
		return stopCode(err)
	}
	return string(reason)
}

// stopCode is an effect step's code: the reason it stopped the run with,
// or the fault's code.
func stopCode(err error) string {
	var s *stop
	if errors.As(err, &s) {
		return string(s.reason)
	}
	return telemetry.Code(err)
}

// guardCode is a guard's code: "" when it held, guard_failed when not.
func guardCode(ok bool, err error) string {
	switch {
	case err != nil:
		return string(contract.ReasonEvaluationFailed)
	case !ok:
		return string(contract.ReasonGuardFailed)
	}
	return ""
}
