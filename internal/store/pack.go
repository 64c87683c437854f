package store

import (
	"bytes"
	"compress/flate"
	"io"
	"sync"
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

// packedV1 is the first byte of a row packed with packDictV1. A new
// dictionary takes a new byte; this one never changes.
const packedV1 = 0x01

// maxPacked bounds what is packed and what unpacking may produce: a larger
// document is stored plain, and a packed row that would unpack to more is
// left as it is (and so fails the checks of what it claims to be).
const maxPacked = 4 << 20

// packDictV1 holds the keys and constant values of the run states,
// receipts and checkpoints the coordinator stores, in the order they
// appear (deflate finds later matches more cheaply). It never changes:
// rows packed with it are read with it.
const packDictV1 = `"type":"oa.receipt-checkpoint/v2","host":"","seq":,"head":"sha256:","runs":,"deployment":"","receiptKey":"sha256:","at":"2026-` +
	`{"at":"2026-T:.Z","attempt":1,"bindingDigest":"sha256:","deployment":"","evidence":[""],"evidenceDigests":{"":"sha256:"},` +
	`"fingerprint":"hmac-sha256:","host":"","job":"","outcome":"done","planDigest":"sha256:","prev":"sha256:","reason":"verified","runId":"run_","seq":,"type":"oa.receipt/v1"}` +
	`{"run_id":"run_","deployment":"","request_id":"","workflow":"","fingerprint":"hmac-sha256:","attempt":1,"status":"terminal","outcome":"done","reason":"verified",` +
	`"completed":[""],"approved":[],"evidence":[""],"digests":{"":"sha256:","":"sha256:"},"plan_digest":"sha256:","binding_digest":"sha256:",` +
	`"owner":{"pid":,"start":""},"receipt_digest":"sha256:","created_at":"2026-T:.Z","updated_at":"2026-T:.Z","mac":"hmac-sha256:"}`

var (
	packers   = sync.Pool{New: func() any { w, _ := flate.NewWriterDict(nil, flate.DefaultCompression, []byte(packDictV1)); return w }}
	unpackers = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), []byte(packDictV1)) }}
)

// Pack is doc as a history row stores it: packed when that is smaller,
// else doc itself. A document that begins with the format byte (never a
// JSON one) is always packed, so that Unpack gives it back; documents
// are at most maxPacked bytes.
func Pack(doc []byte) []byte {
	if len(doc) == 0 || len(doc) > maxPacked {
		return doc
	}
	always := doc[0] == packedV1
	var out bytes.Buffer
	out.Grow(len(doc)/2 + 16)
	out.WriteByte(packedV1)
	w := packers.Get().(*flate.Writer)
	defer packers.Put(w)
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
func Unpack(row []byte) []byte {
	if len(row) == 0 || row[0] != packedV1 {
		return row
	}
	r := unpackers.Get().(io.ReadCloser)
	defer unpackers.Put(r)
	src := bytes.NewReader(row[1:])
	if r.(flate.Resetter).Reset(src, []byte(packDictV1)) != nil {
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
