package coordinator

import (
	"errors"
	"sync"
	"time"
)

// A new run is admitted — the store checked against the host's signed
// head (beforeNewRun) and its row written — while its first steps already
// run, so that the admission's reads and fsync overlap the run's first
// read instead of coming before it. What holds the promise that nothing
// changes before the admission: every write of a run this process
// executes waits for it (writeRun, finish), and an effect is only sent
// after a write (its in-flight mark), as is a pause. A run refused at its
// admission is cancelled and writes nothing: its reads, which change
// nothing, are all it did, and its caller gets the refusal.

// admissionDelay holds every admission back this long before it starts:
// zero but in a test, where it lets a run's first steps reach its first
// write before its admission is decided (SetAdmissionDelay).
var admissionDelay time.Duration

// errNotAdmitted is what a write of a run refused at its admission gets:
// the run has no row to write, and stops.
var errNotAdmitted = errors.New("coordinator: the run was not admitted")

// admissions holds the admission of each run still being admitted.
type admissions struct {
	m sync.Map // run ID → *admission
}

// admission is one run's admission: done is closed once it is decided.
type admission struct {
	done    chan struct{}
	refused bool
}

// begin records that run runID is being admitted.
func (a *admissions) begin(runID string) *admission {
	adm := &admission{done: make(chan struct{})}
	a.m.Store(runID, adm)
	return adm
}

// end decides run runID's admission. An admitted run's record is
// dropped: it is written like any other from here on. A refused run's is
// kept until its execution ended (forget), so every write it still tries
// is refused.
func (a *admissions) end(runID string, adm *admission, refused bool) {
	adm.refused = refused
	close(adm.done)
	if !refused {
		a.m.Delete(runID)
	}
}

// forget drops the record of a refused run whose execution ended.
func (a *admissions) forget(runID string) { a.m.Delete(runID) }

// wait waits for run runID's admission, if it is being admitted, and is
// errNotAdmitted when it was refused. A write waits whatever its context
// says: the admission is bounded by its caller's, and short.
func (a *admissions) wait(runID string) error {
	v, ok := a.m.Load(runID)
	if !ok {
		return nil
	}
	adm := v.(*admission)
	<-adm.done
	if adm.refused {
		return errNotAdmitted
	}
	return nil
}
