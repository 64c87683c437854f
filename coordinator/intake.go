package coordinator

import (
	"errors"
	"sync"
)

// A new run's intake — the store checked against the host's signed head
// (beforeNewRun) and its row written — happens while its first steps
// already run, so that the intake's reads and fsync overlap the run's
// first read instead of coming before it. ("Admission" is a release's,
// package admit's; a run is taken in.) What holds the promise that
// nothing changes before the intake: every write of a run this process
// executes waits for it (the run writer's Ready, finish), and an effect
// is only sent after a write (its in-flight mark), as is a pause. A run
// refused at its intake is cancelled and writes nothing: its reads,
// which change nothing, are all it did, and its caller gets the refusal.

// errRefusedAtIntake is what a write of a run refused at its intake
// gets: the run has no row to write, and stops.
var errRefusedAtIntake = errors.New("coordinator: the run was refused at its intake")

// intakes holds the intake of each run still being taken in.
type intakes struct {
	m sync.Map // run ID → *intake
}

// intake is one run's intake: done is closed once it is decided.
type intake struct {
	done    chan struct{}
	refused bool
}

// begin records that run runID is being taken in.
func (a *intakes) begin(runID string) *intake {
	in := &intake{done: make(chan struct{})}
	a.m.Store(runID, in)
	return in
}

// end decides run runID's intake. A run taken in has its record
// dropped: it is written like any other from here on. A refused run's is
// kept until its execution ended (forget), so every write it still tries
// is refused.
func (a *intakes) end(runID string, in *intake, refused bool) {
	in.refused = refused
	close(in.done)
	if !refused {
		a.m.Delete(runID)
	}
}

// forget drops the record of a refused run whose execution ended.
func (a *intakes) forget(runID string) { a.m.Delete(runID) }

// wait waits for run runID's intake, if it is being taken in, and is
// errRefusedAtIntake when it was refused. A write waits whatever its
// context says: the intake is bounded by its caller's, and short.
func (a *intakes) wait(runID string) error {
	v, ok := a.m.Load(runID)
	if !ok {
		return nil
	}
	in := v.(*intake)
	<-in.done
	if in.refused {
		return errRefusedAtIntake
	}
	return nil
}
