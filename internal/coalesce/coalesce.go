// Package coalesce joins concurrent calls of one read into one call that
// began after each of them arrived. Runs in flight at once each check the
// same state before their steps — the store's signed stamp, its heads —
// and each read costs a statement or two; read once for all of them, the
// answer is as fresh as each caller's own read would have been, because
// a caller is only ever answered by a read that started after it asked.
// Unlike a plain single flight, a caller never joins a read already under
// way: that read may have begun before a change the caller must see.
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

	mu      sync.Mutex
	waiting []*waiter[T]
	reading bool
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
	w := &waiter[T]{ctx: ctx, done: make(chan answer[T], 1)}
	r.mu.Lock()
	r.waiting = append(r.waiting, w)
	if !r.reading {
		r.reading = true
		go r.lead()
	}
	r.mu.Unlock()
	select {
	case a := <-w.done:
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// lead reads for the callers waiting, then for those that came meanwhile,
// until none is left.
func (r *Read[T]) lead() {
	for {
		r.mu.Lock()
		batch := r.waiting
		r.waiting = nil
		if len(batch) == 0 {
			r.reading = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		v, err := r.readFor(batch)
		for _, w := range batch {
			w.done <- answer[T]{v, err}
		}
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
