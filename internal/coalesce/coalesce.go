// Package coalesce joins work that concurrent callers ask for at once.
//
// Read joins concurrent calls of one read into one call that began after
// each of them arrived. Runs in flight at once each check the same state
// before their steps — the store's signed stamp, its heads — and each
// read costs a statement or two; read once for all of them, the answer is
// as fresh as each caller's own read would have been, because a caller is
// only ever answered by a read that started after it asked. Unlike a
// plain single flight, a caller never joins a read already under way:
// that read may have begun before a change the caller must see.
//
// Batches runs the work queued while a batch runs as the next batch, one
// batch at a time: the shape of the store's group commit, of Read, and of
// the checkpoint file's writer.
//
// It imports only the standard library.
package coalesce

import (
	"context"
	"sync"
)

// Read joins concurrent calls of Fn. The zero value is not usable: set Fn.
// Safe for concurrent use.
type Read[T any] struct {
	// Fn reads the value. Its context ends when every caller waiting for
	// this read has gone. What it returns is shared by those callers, so
	// it must not be changed by any of them.
	Fn func(ctx context.Context) (T, error)

	once    sync.Once
	waiting Batches[*waiter[T]]
}

type waiter[T any] struct {
	ctx  context.Context
	done chan answer[T]
}

type answer[T any] struct {
	v   T
	err error
}

// Do returns the value of a call of Fn that began after Do was called,
// shared with the other callers waiting for the same call; or ctx's error
// if ctx ends first.
func (r *Read[T]) Do(ctx context.Context) (T, error) {
	r.once.Do(func() { r.waiting.Run = r.answer })
	w := &waiter[T]{ctx: ctx, done: make(chan answer[T], 1)}
	r.waiting.Add(w)
	select {
	case a := <-w.done:
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// answer reads once for a batch of callers: every one of them called
// before the read began.
func (r *Read[T]) answer(batch []*waiter[T]) {
	v, err := r.readFor(batch)
	for _, w := range batch {
		w.done <- answer[T]{v, err}
	}
}

// readFor calls Fn under a context that ends when every caller of batch
// has gone.
func (r *Read[T]) readFor(batch []*waiter[T]) (T, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := len(batch)
	var mu sync.Mutex
	for _, w := range batch {
		stop := context.AfterFunc(w.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		})
		defer stop()
	}
	return r.Fn(ctx)
}

// Batches runs items in batches, one batch at a time on a goroutine of
// its own: the items added while a batch runs make the next one, as a
// group commit does. Set Run before the first Add; the zero value is
// otherwise ready. Safe for concurrent use.
type Batches[T any] struct {
	// Run runs one batch; it answers the items' callers itself.
	Run func(batch []T)
	// Max bounds the items of one batch; 0 leaves them unbounded.
	Max int

	mu      sync.Mutex
	queue   []T
	leading bool
}

// Add queues item for the next batch, starting the goroutine that runs
// batches when none is.
func (b *Batches[T]) Add(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, item)
	if !b.leading {
		b.leading = true
		go b.lead()
	}
}

// Waiting is how many items wait for a batch.
func (b *Batches[T]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// lead runs batches until none is left.
func (b *Batches[T]) lead() {
	for {
		b.mu.Lock()
		n := len(b.queue)
		if b.Max > 0 {
			n = min(n, b.Max)
		}
		if n == 0 {
			b.leading = false
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.Run(batch)
	}
}
