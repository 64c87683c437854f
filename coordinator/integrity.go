package coordinator

import (
	"context"
	"fmt"
	"sync"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ledger"
)

// The store is checked against the host-signed head (ledger.CheckStore)
// before anything can change: at session start (Open) and before every
// new attempt of a request (a new run, a retry, a resume). A store that disagrees with
// what the host signed — a receipt, checkpoint, pin or run removed or
// edited — is a named refusal, never a fresh attempt: a removed run row
// would otherwise let its request run again, and a removed head would
// let an effect be made whose receipt can then not be sealed.
//
// The check costs a few indexed reads whatever the history (the newest
// receipt, the newest checkpoint, the pins, the checkpoint file, the
// receipt of the request); each session also counts the receipts and
// runs once, in the background from its start, which is what catches a
// row removed from the middle (see docs/AUDIT.md); no attempt writes or
// makes an effect before that count is done. A new run's check is made
// while its first reads run (intake.go). Attempts starting at once share
// one check begun after each of them asked (internal/coalesce): 32 runs
// in flight made the same reads 32 times.

// refuseDisagreeing answers a request whose attempt the store check
// refused: did_not_run, host_records_disagree, nothing started. The
// operator is told the code and why; the caller only the closed reason.
func (sg *storeGuard) refuseDisagreeing(err error, runID, requestID, workflow string, attempt int) *Result {
	codes := ""
	for _, r := range blocking.Refusals(err) {
		codes += fmt.Sprintf(" %s (%s)", r.Code, r.Detail)
	}
	fmt.Fprintf(sg.opts.Operator, "oa coordinator: deployment %s: the host's records disagree with its signed head:%s; no attempt started\n", sg.opts.Deployment, codes)
	res := newResult(contract.ReasonHostRecordsDisagree)
	res.RunID, res.RequestID, res.Workflow, res.Attempt, res.Proof = runID, requestID, workflow, attempt, contract.ProofNone
	return &res
}

// countStore counts the receipts and runs against the heads Open
// checked, in the background: the count reads every row, so it is not
// made before the session answers, but no attempt starts before it is
// done (beforeAttempt waits for it), so a row removed from the middle of
// the history is refused before any effect.
func (sg *storeGuard) countStore(heads *ledger.Heads, runs *sync.WaitGroup) {
	sg.counted = make(chan struct{})
	runs.Add(1) // Close waits for it, as for a run
	go func() {
		defer runs.Done()
		defer close(sg.counted)
		sg.countErr = sg.ledger.CheckCounts(sg.life, heads)
	}()
}

// beforeAttempt is the store check before a new attempt: nil when the
// attempt may start, else the refusal's result. The error is for program
// faults only.
func (sg *storeGuard) beforeAttempt(ctx context.Context, runID, requestID, workflow string, attempt int) (*Result, error) {
	err := sg.waitCounted(ctx)
	if err == nil {
		_, err = sg.storeChecks.Do(ctx)
	}
	if err == nil {
		return nil, nil
	}
	if blocking.Refusals(err) == nil {
		return nil, err
	}
	return sg.refuseDisagreeing(err, runID, requestID, workflow, attempt), nil
}

// checkStore is the store check of beforeAttempt.
func (sg *storeGuard) checkStore(ctx context.Context) (struct{}, error) {
	_, err := sg.ledger.CheckStore(ctx, &sg.heads, false)
	return struct{}{}, err
}

// beforeNewRun is beforeAttempt for a request with no run row: besides
// the heads, the chain must hold no receipt of that request, else its
// run row was removed and running it would repeat its effects.
func (sg *storeGuard) beforeNewRun(ctx context.Context, requestID string) (*Result, error) {
	sealed, err := sg.ledger.Tables().SealedRunOf(ctx, sg.opts.Deployment, requestID)
	if err != nil {
		return nil, err
	}
	if sealed != "" {
		return sg.refuseDisagreeing(blocking.New(blocking.ReceiptRunsDisagree, "the chain holds a receipt of this request's run %s, whose run row is gone", sealed), "", requestID, "", 0), nil
	}
	return sg.beforeAttempt(ctx, "", requestID, "", 0)
}

// waitCounted waits for the count of the session start, and is its
// disagreement.
func (sg *storeGuard) waitCounted(ctx context.Context) error {
	if sg.counted == nil {
		return nil
	}
	select {
	case <-sg.counted:
		return sg.countErr
	case <-ctx.Done():
		return ctx.Err()
	}
}
