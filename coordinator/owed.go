package coordinator

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/oa-dev/oa/contract"
)

// owed holds, per run this process executes, the changes the run made
// since its last durable write that no outcome depends on before its next
// one, so they ride on that write instead of a transaction and an fsync of
// their own:
//
//   - an effect's completion: its in-flight mark was made durable before
//     the call, so a crash before the next write reads, as it would a
//     moment earlier, as an effect that may have been made
//     (not_sure_if_saved), never as one not sent;
//   - a check's evidence, which only the verdict reads, and the verdict is
//     written with the receipt.
//
// Every write of a run this process makes applies what is owed first
// (update, the pauses, finish), and execute pays what is left before it
// returns, so nothing owed outlives its run's execution.
type owed struct {
	mu    sync.Mutex
	seq   uint64
	byRun map[string][]owedChange
}

// owedChange is one owed change and its place in the order they were
// made. apply must be idempotent: two writes may carry the same change.
type owedChange struct {
	seq   uint64
	apply func(*runState)
}

// add owes change to run runID's next write.
func (o *owed) add(runID string, apply func(*runState)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byRun == nil {
		o.byRun = map[string][]owedChange{}
	}
	o.seq++
	o.byRun[runID] = append(o.byRun[runID], owedChange{o.seq, apply})
}

// onto applies to r every change owed for its run, and returns the
// sequence number to give paid once the write carrying them committed.
func (o *owed) onto(r *runState) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var upto uint64
	for _, ch := range o.byRun[r.RunID] {
		ch.apply(r)
		upto = ch.seq
	}
	return upto
}

// paid forgets the changes up to upto of run runID: a committed write
// carried them.
func (o *owed) paid(runID string, upto uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	left := slices.DeleteFunc(o.byRun[runID], func(ch owedChange) bool { return ch.seq <= upto })
	if len(left) == 0 {
		delete(o.byRun, runID)
		return
	}
	o.byRun[runID] = left
}

// pending reports whether run runID owes any change.
func (o *owed) pending(runID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byRun[runID]) > 0
}

// owe applies change to r, the run as this process executes it, and owes
// it to the run's next write.
func (eng *engine) owe(r *runState, change func(*runState)) {
	change(r)
	eng.owed.add(r.RunID, change)
}

// payOwed writes what run runID still owes when its execution ends
// without a write that carried it (in practice none does: every ending
// writes the run). A run no longer executing here (ended by another
// caller) is left as it is.
func (eng *engine) payOwed(runID string) {
	if !eng.owed.pending(runID) {
		return
	}
	err := eng.update(context.Background(), runID, func(cur *runState) error {
		if cur.Status == stateTerminal || cur.Owner != eng.me {
			return errNotContinued
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(eng.opts.Operator, "oa coordinator: run %s: the changes it made last were not written: %v\n", runID, err)
	}
	eng.owed.paid(runID, ^uint64(0))
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
