package coordinator

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
)

// Witnessing (issue 41): when the host policy names witnesses, the
// coordinator submits the log's newest checkpoint to each of them in the
// background (ledger.Ledger.SubmitCheckpoint), never on a run's path: a run
// seals its receipt and its leaf and is done; the loop finds the new
// checkpoint at its next look. Each request is bounded in time; a
// witness that fails is tried again after a backoff that doubles up to
// witnessBackoffMax, and its failure is told to the operator in fixed
// words, once a failure and again when it cosigns.
const (
	witnessLook           = 2 * time.Second
	witnessRequestTimeout = 10 * time.Second
	witnessBackoffMin     = time.Second
	witnessBackoffMax     = 5 * time.Minute
)

// witnessState is the loop's view of one witness.
type witnessState struct {
	next    time.Time
	delay   time.Duration
	failing bool
}

// startWitnessing starts the loop, when the policy names witnesses; it
// ends with the coordinator's life (Close waits for it).
func (c *Coordinator) startWitnessing() {
	wit := c.host.Policy.Witnessing
	if wit == nil {
		return
	}
	done := make(chan struct{})
	c.witnessing = done
	hc := &http.Client{Timeout: witnessRequestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	go func() {
		defer close(done)
		states := map[string]*witnessState{}
		for _, name := range wit.Names() {
			states[name] = &witnessState{}
		}
		look := time.NewTicker(witnessLook)
		defer look.Stop()
		for {
			var wg sync.WaitGroup
			now := time.Now()
			for _, name := range wit.Names() {
				s := states[name]
				if now.Before(s.next) {
					continue
				}
				wg.Go(func() { c.submitTo(hc, name, wit.Witnesses[name], s) })
			}
			wg.Wait()
			select {
			case <-c.life.Done():
				return
			case <-look.C:
			}
		}
	}()
}

// submitTo submits the newest checkpoint to one witness and moves its
// backoff.
func (c *Coordinator) submitTo(hc *http.Client, name string, w host.Witness, s *witnessState) {
	res, err := c.ledger.SubmitCheckpoint(c.life, hc, w)
	if c.life.Err() != nil {
		return
	}
	if err == nil {
		if s.failing && res.Cosigned > 0 {
			fmt.Fprintf(c.opts.Operator, "oa coordinator: witness %s: cosigned the log's checkpoint of size %d\n", name, res.Cosigned)
		}
		*s = witnessState{}
		return
	}
	s.delay = min(max(2*s.delay, witnessBackoffMin), witnessBackoffMax)
	s.next = time.Now().Add(s.delay)
	if !s.failing {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: witness %s: the log's newest checkpoint is not cosigned: %s; trying again with backoff (up to %s); runs go on\n", name, witnessFailure(err), witnessBackoffMax)
	}
	s.failing = true
}

// witnessFailure says why a submission failed in fixed words: never a
// transport error's or the witness's text.
func witnessFailure(err error) string {
	var status *translog.ErrWitnessStatus
	switch {
	case errors.Is(err, ledger.ErrWitnessAhead):
		return "the witness has cosigned a larger tree of this log than it holds (rolled back, or the log key is used elsewhere)"
	case errors.As(err, &status) && status.Status == http.StatusUnprocessableEntity:
		return "the witness refused it: the consistency proof from what it cosigned fails (422)"
	case errors.As(err, &status):
		return fmt.Sprintf("the witness refused it (%d)", status.Status)
	case errors.Is(err, ledger.ErrWitnessRefused):
		return "the witness refused it (409 twice)"
	case errors.Is(err, ledger.ErrWitnessUnreachable):
		return "the witness could not be reached, or answered no valid cosignature"
	}
	return "the host's log could not be read"
}

// waitWitnessing waits for the loop to end (after life ended).
func (c *Coordinator) waitWitnessing() {
	if c.witnessing != nil {
		<-c.witnessing
	}
}
