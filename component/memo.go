package component

import "github.com/oa-dev/oa/internal/memo"

// A Pool remembers the values of recent evaluations (Pool.done): an
// evaluation is a pure function of its source and of the values it refers
// to (the ones omitUnused leaves in its request), so the same request has
// the same value, and a run that evaluates one arguments evaluator for a
// read and again for the check that reads back (the same record lookup)
// pays one worker round trip. Only values are remembered, never errors:
// an evaluation over budget is tried again. At most maxMemo are held;
// when full, it starts over (internal/memo). Values are copied in and
// out, so no caller changes what another is answered.

// maxMemo bounds the evaluations a Pool remembers.
const maxMemo = 1024

// key is the digest of everything an evaluation's value depends on.
func (req *request) key() memo.ID {
	return memo.IDOf([]byte(req.Source), req.Input, req.Steps, req.Result)
}
