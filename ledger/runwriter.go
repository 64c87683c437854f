package ledger

import (
	"context"
	"slices"
	"sync"
	"time"
)

// RunStates is how a RunWriter handles its user's state of a run, S (the
// coordinator's, which the ledger does not import: it comes later in the
// stage order), given as functions.
type RunStates[S any] struct {
	// Decode decodes a stored state, its MAC checked.
	Decode func(state []byte) (*S, error)
	// Encode encodes a state for the store, with its MAC.
	Encode func(*S) ([]byte, error)
	// OfRecord is the state a run record is: FinishRun decodes and seals
	// records, so S must be the record in its user's type.
	OfRecord func(*RunRecord) *S
	// Stamp, when not nil, marks a state as moved now, last in every
	// write.
	Stamp func(*S)
	// Ready, when not nil, waits until run runID may be written and
	// says why it may not (the coordinator's new run being taken in):
	// nothing is written then, and nothing owed is forgotten.
	Ready func(runID string) error
}

// RunWriter writes the runs one process executes, and holds for each the
// changes it owes: those made since the run's last durable write that no
// outcome depends on before its next one, so they ride on that write
// instead of a transaction and an fsync of their own. What may be owed
// is its user's promise to keep — in the coordinator, an effect's
// completion (its in-flight mark was made durable before the call, so a
// crash before the next write reads as an effect that may have been
// made, never as one not sent) and a check's evidence (read only by the
// verdict, written with the receipt).
//
// Every write of a run through it (Update, Pause, Finish) applies what
// the run owes first, in the order it was owed, then the write's own
// move, then Stamp; what it carried is forgotten only once it committed.
// Pay writes what is left when the run's execution ends, so nothing owed
// outlives it. A RunWriter is safe for concurrent use.
type RunWriter[S any] struct {
	ledger *Ledger
	states RunStates[S]

	mu    sync.Mutex
	seq   uint64
	byRun map[string][]owedChange[S]
}

// owedChange is one owed change and its place in the order changes were
// owed. apply must be idempotent: two writes may carry the same change
// (the first failed, or its transaction was run again).
type owedChange[S any] struct {
	seq   uint64
	apply func(*S)
}

// NewRunWriter is l's writer of runs whose state is an S. Go has no
// generic methods, so it is a function of the Ledger rather than one of
// its methods; one writer serves every run of a process, and every write
// of a run that owes must go through it.
func NewRunWriter[S any](l *Ledger, states RunStates[S]) *RunWriter[S] {
	return &RunWriter[S]{ledger: l, states: states, byRun: map[string][]owedChange[S]{}}
}

// Owe owes change to run runID's next write. The caller applies it to
// its own copy of the run as well, if it reads it.
func (w *RunWriter[S]) Owe(runID string, change func(*S)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.byRun[runID] = append(w.byRun[runID], owedChange[S]{w.seq, change})
}

// Owes reports whether run runID owes any change.
func (w *RunWriter[S]) Owes(runID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byRun[runID]) > 0
}

// Update moves run runID in one write transaction (Tables.UpdateRun):
// move gets the stored state, with what the run owes applied, and
// changes it or returns an error, and then nothing is written.
func (w *RunWriter[S]) Update(ctx context.Context, runID string, move func(*S) error) error {
	return w.write(runID, move, func(update func([]byte) ([]byte, error)) error {
		return w.ledger.Tables().UpdateRun(ctx, runID, update)
	})
}

// Pause inserts attention item a and moves its run in one write
// transaction (Tables.PauseRun), as Update moves it.
func (w *RunWriter[S]) Pause(ctx context.Context, a AttentionRow, move func(*S) error) error {
	return w.write(a.RunID, move, func(update func([]byte) ([]byte, error)) error {
		return w.ledger.Tables().PauseRun(ctx, a, update)
	})
}

// Finish ends run runID and seals its receipt in one write transaction
// (Ledger.FinishRun): end gets the stored state, with what the run owes
// applied, and makes it terminal. It returns the state sealed.
func (w *RunWriter[S]) Finish(ctx context.Context, runID string, now time.Time, end func(*S) error) (*S, error) {
	if err := w.ready(runID); err != nil {
		return nil, err
	}
	move, paid := w.owing(runID, end)
	sealed, err := w.ledger.FinishRun(ctx, runID, now, func(r *RunRecord) error { return move(w.states.OfRecord(r)) })
	if err != nil {
		return nil, err
	}
	paid()
	return w.states.OfRecord(sealed), nil
}

// Pay writes what run runID still owes when its execution ends without a
// write that carried it (Update with move, which may refuse: a run no
// longer executing here is left as it is), and forgets it whether or not
// that write committed: nothing owed outlives the run's execution. It
// writes nothing when the run owes nothing.
func (w *RunWriter[S]) Pay(ctx context.Context, runID string, move func(*S) error) error {
	if !w.Owes(runID) {
		return nil
	}
	err := w.Update(ctx, runID, move)
	w.paid(runID, ^uint64(0))
	return err
}

// write is a write of run runID's state through a store write that hands
// over the stored bytes: write runs update in its transaction, which
// decodes the stored state, moves it (owing) and encodes the result.
func (w *RunWriter[S]) write(runID string, move func(*S) error, write func(update func([]byte) ([]byte, error)) error) error {
	if err := w.ready(runID); err != nil {
		return err
	}
	moved, paid := w.owing(runID, move)
	err := write(func(b []byte) ([]byte, error) {
		r, err := w.states.Decode(b)
		if err != nil {
			return nil, err
		}
		if err := moved(r); err != nil {
			return nil, err
		}
		return w.states.Encode(r)
	})
	if err == nil {
		paid()
	}
	return err
}

// ready is Ready's answer for run runID, nil when there is no Ready.
func (w *RunWriter[S]) ready(runID string) error {
	if w.states.Ready == nil {
		return nil
	}
	return w.states.Ready(runID)
}

// owing is how every write of run runID moves it: moved applies what the
// run owes, then move, then Stamp; paid forgets what the write carried,
// once it committed.
func (w *RunWriter[S]) owing(runID string, move func(*S) error) (moved func(*S) error, paid func()) {
	var upto uint64
	moved = func(r *S) error {
		upto = w.onto(runID, r)
		if err := move(r); err != nil {
			return err
		}
		if w.states.Stamp != nil {
			w.states.Stamp(r)
		}
		return nil
	}
	return moved, func() { w.paid(runID, upto) }
}

// onto applies to r every change owed for run runID, in order, and
// returns the sequence number of the last one, to give paid once the
// write carrying them committed.
func (w *RunWriter[S]) onto(runID string, r *S) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var upto uint64
	for _, ch := range w.byRun[runID] {
		ch.apply(r)
		upto = ch.seq
	}
	return upto
}

// paid forgets the changes up to upto of run runID: a committed write
// carried them (or, from Pay, the run's execution ended).
func (w *RunWriter[S]) paid(runID string, upto uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	left := slices.DeleteFunc(w.byRun[runID], func(ch owedChange[S]) bool { return ch.seq <= upto })
	if len(left) == 0 {
		delete(w.byRun, runID)
		return
	}
	w.byRun[runID] = left
}
