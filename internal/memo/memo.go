// Package memo remembers values under a digest of what they were made
// from. ID digests its parts, each length-prefixed, so no two lists of
// parts share an id; Bounded holds at most Max values and is emptied when
// full, so the values put most recently are the ones kept. It is the
// plumbing of the evaluation memo (component) and of the verification
// memo (signing); it imports only the standard library.
package memo

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// ID is the digest a value is remembered under.
type ID = [sha256.Size]byte

// IDOf is the SHA-256 of parts, each prefixed with its length.
func IDOf(parts ...[]byte) ID {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var sum ID
	h.Sum(sum[:0])
	return sum
}

// Bounded remembers at most Max values by ID; a Put into a full memo
// empties it first. Safe for concurrent use.
type Bounded[V any] struct {
	Max int
	mu  sync.Mutex
	m   map[ID]V
}

// Get returns the value remembered under id.
func (b *Bounded[V]) Get(id ID) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[id]
	return v, ok
}

// Put remembers v under id.
func (b *Bounded[V]) Put(id ID, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= b.Max {
		b.m = make(map[ID]V)
	}
	b.m[id] = v
}

// Len is how many values are remembered.
func (b *Bounded[V]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
