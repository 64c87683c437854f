package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/ledger"
)

// Run states (the statuses of its record).
const (
	stateRunning  = ledger.RunRunning
	statePaused   = ledger.RunPaused
	stateTerminal = ledger.RunTerminal
)

// runState is a run's durable record (ledger.RunRecord) with the
// engine's methods.
type runState ledger.RunRecord

// decodeRun is ledger.DecodeRun: a stored state, its MAC checked.
func decodeRun(key, b []byte) (*runState, error) {
	r, err := ledger.DecodeRun(key, b)
	return (*runState)(r), err
}

// encode encodes r for the store with its MAC made with key.
func (r *runState) encode(key []byte) ([]byte, error) { return (*ledger.RunRecord)(r).Encode(key) }

// effectsStarted reports whether any effect may have reached the app.
func (r *runState) effectsStarted() bool { return r.InFlight != "" || len(r.Completed) > 0 }

func (r *runState) completed(step string) bool { return slices.Contains(r.Completed, step) }

// afterChange is reason, unless an earlier effect of the run was made and
// reason says nothing was: then the run is part-way, never did_not_run.
func (r *runState) afterChange(reason contract.Reason) contract.Reason {
	info, _ := reason.Info()
	if len(r.Completed) == 0 || info.RecordChanged != contract.ChangedNo {
		return reason
	}
	if reason == contract.ReasonApprovalRequired {
		return contract.ReasonApprovalAfterChange
	}
	return contract.ReasonPartiallyDone
}
func (r *runState) approved(step string) bool { return slices.Contains(r.Approved, step) }

// decidedFor reports whether a person's approval or skip of step was
// made on the call of digest callDigest.
func (r *runState) decidedFor(step, callDigest string) bool {
	d, ok := r.DecidedCalls[step]
	return ok && d != "" && d == callDigest
}

// forgetDecision drops a person's approval or skip of step: the step now
// proposes another call, which a new item asks about.
func (r *runState) forgetDecision(step string) {
	r.Approved = slices.DeleteFunc(r.Approved, func(s string) bool { return s == step })
	r.SkipAllowed = slices.DeleteFunc(r.SkipAllowed, func(s string) bool { return s == step })
	if len(r.SkipAllowed) == 0 {
		r.SkipAllowed = nil
	}
	delete(r.DecidedCalls, step)
	if len(r.DecidedCalls) == 0 {
		r.DecidedCalls = nil
	}
}

// skipAllowed reports whether a person chose to skip step.
func (r *runState) skipAllowed(step string) bool { return slices.Contains(r.SkipAllowed, step) }

// decidedAt reports whether a person let the paused run go on: approved
// or skipped the step it waits at.
func (r *runState) decidedAt() bool { return r.approved(r.PausedAt) || r.skipAllowed(r.PausedAt) }

// result is what the calling agent sees of the run.
func (r *runState) result() *Result {
	res := newResult(r.Reason)
	res.RunID, res.RequestID, res.Workflow, res.Attempt = r.RunID, r.RequestID, r.Workflow, r.Attempt
	res.Evidence = append([]string{}, r.Evidence...)
	res.AttentionID = r.AttentionID
	if r.Status == stateTerminal && r.Receipt != "" {
		res.Proof, res.ReceiptDigest = contract.ProofSealed, r.Receipt
	}
	return &res
}

// readRun reads a run's state from the host's store, its MAC checked.
func readRun(ctx context.Context, l *ledger.Ledger, runID string) (*runState, error) {
	r, err := l.ReadRun(ctx, runID)
	return (*runState)(r), err
}

// decodeRow decodes a stored run, its MAC checked and its row's keys the
// ones its state names.
func decodeRow(key []byte, row *ledger.RunRow) (*runState, error) {
	r, err := ledger.DecodeRunRow(key, row)
	return (*runState)(r), err
}

// verifiedRun reads the run a request names before a replay, retry or
// resume acts on it: its MAC, its row, and that it is not older than the
// receipts the chain holds for it (a row rolled back to an earlier,
// validly MACed state would otherwise start a new attempt). A tampered
// row is answered with run_record_tampered, never acted on.
func (eng *engine) verifiedRun(ctx context.Context, row *ledger.RunRow) (*runState, *Result, error) {
	r, err := decodeRow(eng.secret, row)
	if err == nil {
		err = checkAgainstReceipts(ctx, eng.ledger, r)
	}
	if blocking.Has(err, blocking.RunRecordTampered) {
		fmt.Fprintf(eng.opts.Operator, "oa coordinator: deployment %s: run %s: %v; refused\n", eng.opts.Deployment, row.RunID, err)
		res := newResult(contract.ReasonRunRecordTampered)
		res.RunID, res.RequestID, res.Proof = row.RunID, row.RequestID, contract.ProofNone
		return nil, &res, nil
	}
	return r, nil, err
}

// checkAgainstReceipts refuses a run whose state is older than the
// receipts sealed for it: a receipt of a later attempt, or of its own
// attempt while the state names none or another.
func checkAgainstReceipts(ctx context.Context, l *ledger.Ledger, r *runState) error {
	last, err := l.Tables().LastReceiptOf(ctx, r.RunID)
	if err != nil || last == nil {
		return err
	}
	switch {
	case last.Attempt > r.Attempt:
		return ledger.RunTampered("the run record is older than its receipts")
	case last.Attempt == r.Attempt && (r.Status != stateTerminal || r.Receipt != ir.DigestBytes(last.Record)):
		return ledger.RunTampered("the run record does not name its attempt's receipt")
	}
	return nil
}

// sealRun seals the run's attempt, once terminal, into the host's receipt
// chain (ledger.Ledger.SealRun) and returns the run as stored.
func sealRun(ctx context.Context, l *ledger.Ledger, runID string, now time.Time) (*runState, error) {
	r, err := l.SealRun(ctx, runID, now)
	return (*runState)(r), err
}

// digestJSON is the digest of a JSON value's canonical form (of its bytes
// when they are not canonicalizable).
func digestJSON(b json.RawMessage) string {
	c, err := canonical.Transform(b)
	if err != nil {
		return ir.DigestBytes(b)
	}
	return ir.DigestBytes(c)
}

// completedEffect is the change an effect's success (reason "") or
// failure makes to its run: a success is completed with its result's
// digest; the in-flight mark ends when the call succeeded or provably
// wrote nothing.
func completedEffect(step, digest string, reason contract.Reason) func(*runState) {
	return func(cur *runState) {
		if reason == "" {
			if !slices.Contains(cur.Completed, step) {
				cur.Completed = append(cur.Completed, step)
			}
			cur.Digests = withDigest(cur.Digests, step, digest)
		}
		if cur.InFlight == step && (reason == "" || reasonWroteNothing(reason)) {
			cur.InFlight = ""
		}
	}
}

// evidenceRead is the change a check that held makes to its run: its
// evidence, and the digest of what it read.
func evidenceRead(step, evidence, digest string) func(*runState) {
	return func(cur *runState) {
		if !slices.Contains(cur.Evidence, evidence) {
			cur.Evidence = append(cur.Evidence, evidence)
		}
		cur.Digests = withDigest(cur.Digests, step, digest)
	}
}

// withDigest is digests with step's digest set (a new map when nil).
func withDigest(digests map[string]string, step, digest string) map[string]string {
	if digests == nil {
		digests = map[string]string{}
	}
	digests[step] = digest
	return digests
}
