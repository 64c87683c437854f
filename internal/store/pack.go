package store

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"
	"sync/atomic"
)

// Rows that grow with a host's history — each run's state, each
// checkpoint's record (the ledger's store packs these two; receipts stay
// plain, see ledger/store.go) — are JSON documents that repeat the
// same keys and constants in every row. They are stored packed: one format byte, then the document deflated against a fixed
// dictionary of those keys. Unpacking gives back the exact bytes that were
// packed, so every signature and MAC is checked over the same bytes as
// before, and a packed row edited behind the store's back unpacks to
// something that no longer verifies — or, for the padding bits after the
// header of the empty block that ends every packed row (at most 7, which
// deflate ignores), to the same document, which changes nothing that is
// checked. Rows stored before (plain JSON, whose
// first byte is never the format byte) are read as they are.
//
// The store holds the mechanism (Packing); the dictionary is its owner's,
// the ledger's, whose rows these are: the ledger sets it (PackHistoryWith)
// when its package is loaded, so every program that can read a run or a
// checkpoint reads its packed rows.

// maxPacked bounds what is packed and what unpacking may produce: a larger
// document is stored plain, and a packed row that would unpack to more is
// left as it is (and so fails the checks of what it claims to be).
const maxPacked = 4 << 20

// Packing is one way of packing history rows: a format byte and the
// dictionary the documents are deflated against. Neither ever changes
// for rows packed with it; a new dictionary takes a new format byte.
type Packing struct {
	format    byte
	dict      []byte
	packers   sync.Pool
	unpackers sync.Pool
}

// NewPacking is the packing whose rows begin with format and are deflated
// against dict. format must be a byte no JSON document begins with.
func NewPacking(format byte, dict string) *Packing {
	p := &Packing{format: format, dict: []byte(dict)}
	p.packers.New = func() any { w, _ := flate.NewWriterDict(nil, flate.DefaultCompression, p.dict); return w }
	p.unpackers.New = func() any { return flate.NewReaderDict(bytes.NewReader(nil), p.dict) }
	return p
}

// Pack is doc as a history row stores it: packed when that is smaller,
// else doc itself. A document that begins with the format byte (never a
// JSON one) is always packed, so that Unpack gives it back; documents
// are at most maxPacked bytes.
func (p *Packing) Pack(doc []byte) []byte {
	if len(doc) == 0 || len(doc) > maxPacked {
		return doc
	}
	always := doc[0] == p.format
	var out bytes.Buffer
	out.Grow(len(doc)/2 + 16)
	out.WriteByte(p.format)
	w := p.packers.Get().(*flate.Writer)
	defer p.packers.Put(w)
	w.Reset(&out)
	if _, err := w.Write(doc); err != nil || w.Close() != nil || out.Len() >= len(doc) && !always {
		return doc
	}
	return out.Bytes()
}

// Unpack is the document a history row holds: the row itself unless it
// is packed. A packed row that does not unpack (edited, cut, or larger
// than maxPacked) is returned as it is, so it fails the decode or
// signature check of whatever it claims to be, as any edited row does.
func (p *Packing) Unpack(row []byte) []byte {
	if len(row) == 0 || row[0] != p.format {
		return row
	}
	r := p.unpackers.Get().(io.ReadCloser)
	defer p.unpackers.Put(r)
	src := bytes.NewReader(row[1:])
	if r.(flate.Resetter).Reset(src, p.dict) != nil {
		return row
	}
	var out bytes.Buffer
	out.Grow(len(row) * 3)
	// Every byte must be part of the packed document: bytes after its
	// end would be a second form of the same row.
	n, err := out.ReadFrom(io.LimitReader(r, maxPacked+1))
	if err != nil || n > maxPacked || src.Len() != 0 {
		return row
	}
	return out.Bytes()
}

// history is the packing of the history rows, set by their owner.
var history atomic.Pointer[Packing]

// PackHistoryWith makes p the packing of the history rows: what Pack
// writes and Unpack (and every scan of a run, receipt or version) reads.
// The ledger, whose rows they are, sets it.
func PackHistoryWith(p *Packing) { history.Store(p) }

// Pack is doc as a history row stores it (Packing.Pack with the history
// packing); with none set, doc itself.
func Pack(doc []byte) []byte {
	if p := history.Load(); p != nil {
		return p.Pack(doc)
	}
	return doc
}

// Unpack is the document a history row holds (Packing.Unpack with the
// history packing); with none set, the row itself, so a packed row then
// fails the checks of what it claims to be rather than being believed.
func Unpack(row []byte) []byte {
	if p := history.Load(); p != nil {
		return p.Unpack(row)
	}
	return row
}
