package signing

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// A host reads back the records it signed many times a run — the receipt
// key's pin, the last checkpoint from the store and from its file — and
// each read verified the same bytes with the same key again (an ECDSA
// verification and a PEM parse each, about a tenth of a millisecond).
// What verified once verifies always: a verification is a function of the
// key, the signature and the message. So successes are remembered, keyed
// by a digest of all three, and only successes: a signature that fails is
// checked again every time. Parsed public keys are remembered the same
// way, by a digest of their PEM.

// maxMemo bounds each memo; a full memo is emptied and fills again, so the
// records read most recently (the ones read again) are the ones kept.
const maxMemo = 4096

// boundedMemo is a set of digests with values, emptied when full.
type boundedMemo[V any] struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]V
}

func (b *boundedMemo[V]) get(id [sha256.Size]byte) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[id]
	return v, ok
}

func (b *boundedMemo[V]) put(id [sha256.Size]byte, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= maxMemo {
		b.m = map[[sha256.Size]byte]V{}
	}
	b.m[id] = v
}

var (
	// verified holds the (key, signature, message) triples that verified.
	verified boundedMemo[struct{}]
	// loadedVerifiers holds the verifiers parsed from public key PEMs.
	loadedVerifiers boundedMemo[*Verifier]
)

// memoID is the SHA-256 of parts, each length-prefixed, so no two lists
// of parts share an id.
func memoID(parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
