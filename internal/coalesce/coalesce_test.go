package coalesce_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/coalesce"
)

// counter is a read that answers the number of reads begun so far, and
// waits for release before answering while gate is set.
type counter struct {
	reads   atomic.Int64
	started chan int64
	release chan struct{}
}

func newCounter() *counter {
	return &counter{started: make(chan int64, 16), release: make(chan struct{})}
}

func (c *counter) read(ctx context.Context) (int64, error) {
	n := c.reads.Add(1)
	c.started <- n
	select {
	case <-c.release:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// TestCallersShareAReadBegunAfterThem: callers that arrive while a read
// is under way do not take its answer (it may predate what they must
// see); they share the one read begun after all of them.
func TestCallersShareAReadBegunAfterThem(t *testing.T) {
	c := newCounter()
	r := &coalesce.Read[int64]{Fn: c.read}
	ctx := context.Background()
	first := make(chan int64, 1)
	go func() { v, _ := r.Do(ctx); first <- v }()
	if n := <-c.started; n != 1 {
		t.Fatalf("read %d began first", n)
	}
	const later = 8
	got := make([]int64, later)
	var wg sync.WaitGroup
	for i := range later {
		wg.Go(func() { got[i], _ = r.Do(ctx) })
	}
	// Let every later caller queue before the first read ends.
	time.Sleep(20 * time.Millisecond)
	close(c.release)
	wg.Wait()
	if v := <-first; v != 1 {
		t.Fatalf("the first caller got read %d", v)
	}
	for i, v := range got {
		if v != 2 {
			t.Fatalf("later caller %d got read %d, want the one read begun after it (2)", i, v)
		}
	}
	if n := c.reads.Load(); n != 2 {
		t.Fatalf("%d reads for 1 + %d callers, want 2", n, later)
	}
}

// TestACallerLeavesOnItsContext: a caller whose context ends is answered
// with its context's error at once; the read goes on for the callers
// still waiting, and is cancelled only when none is left.
func TestACallerLeavesOnItsContext(t *testing.T) {
	c := newCounter()
	r := &coalesce.Read[int64]{Fn: c.read}
	leaving, leave := context.WithCancel(context.Background())
	staying, stay := context.WithCancel(context.Background())
	defer stay()
	errs := make(chan error, 2)
	vals := make(chan int64, 1)
	go func() { _, err := r.Do(leaving); errs <- err }()
	<-c.started
	go func() { v, err := r.Do(staying); vals <- v; errs <- err }()
	leave()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that left got %v", err)
	}
	close(c.release)
	if v, err := <-vals, <-errs; err != nil || v != 2 {
		t.Fatalf("the caller that stayed got read %d, %v", v, err)
	}

	// Every caller gone: the read's context ends.
	c2 := &counter{started: make(chan int64, 1), release: make(chan struct{})}
	r2 := &coalesce.Read[int64]{Fn: c2.read}
	gone, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r2.Do(gone); done <- err }()
	<-c2.started
	cancel()
	<-done
	// The read returns only when its context ends (release is never
	// closed); a next caller then gets a new read.
	next, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	go func() { <-c2.started; close(c2.release) }()
	if v, err := r2.Do(next); err != nil || v != 2 {
		t.Fatalf("after every caller left, a new caller got read %d, %v", v, err)
	}
}
