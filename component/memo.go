package component

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
)

// memo remembers the values of recent evaluations: an evaluation is a
// pure function of its source and of the values it refers to (the ones
// omitUnused leaves in its request), so the same request has the same
// value, and a run that evaluates one arguments evaluator for a read and
// again for the check that reads back (the same record lookup) pays one
// worker round trip. Only values are remembered, never errors: an
// evaluation over budget is tried again. At most maxMemo are held; when
// full, it starts over.
type memo struct {
	mu     sync.Mutex
	values map[[sha256.Size]byte]json.RawMessage
}

// maxMemo bounds the evaluations a Pool remembers.
const maxMemo = 1024

// key is the digest of everything an evaluation's value depends on, each
// part length-prefixed so no two requests share one.
func (req *request) key() [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{[]byte(req.Source), req.Input, req.Steps, req.Result} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// get returns the remembered value of the request with key k.
func (m *memo) get(k [sha256.Size]byte) (json.RawMessage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.values[k]
	return slices.Clone(v), ok
}

// put remembers v as the value of the request with key k.
func (m *memo) put(k [sha256.Size]byte, v json.RawMessage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil || len(m.values) >= maxMemo {
		m.values = make(map[[sha256.Size]byte]json.RawMessage)
	}
	m.values[k] = v
}
