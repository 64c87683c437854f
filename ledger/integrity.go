package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"sync"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
)

// The store is checked against the host-signed head (CheckStore) before
// anything can change: the coordinator checks it at session start and
// before every new attempt of a request (a new run, a retry, a resume). A store that disagrees with
// what the host signed — a receipt, checkpoint, pin or run removed or
// edited — is a named refusal, never a fresh attempt: a removed run row
// would otherwise let its request run again, and a removed head would
// let an effect be made whose receipt can then not be sealed.
//
// The check costs a few indexed reads whatever the history (the newest
// receipt, the newest checkpoint, the pins, the checkpoint file, the
// receipt of the request); each session also counts the receipts and
// runs once, in the background from its start, which is what catches a
// row removed from the middle (see docs/AUDIT.md); no attempt starts
// before that count is done.

// HeadCache remembers which checkpoint signatures verified, by the
// digest of their bytes, so an unchanged head is not verified again
// before every attempt. Its zero value is ready; it is safe for
// concurrent use.
type HeadCache struct {
	mu sync.Mutex
	ok map[[sha256.Size]byte]*Checkpoint
}

// read is readCheckpoint, remembered.
func (k *HeadCache) read(h *host.Host, keys PinnedKeys, record, signature []byte) (*Checkpoint, error) {
	sum := sha256.New()
	sum.Write(record)
	sum.Write([]byte{0})
	sum.Write(signature)
	var id [sha256.Size]byte
	copy(id[:], sum.Sum(nil))
	k.mu.Lock()
	cp := k.ok[id]
	k.mu.Unlock()
	if cp != nil {
		// Only the pin can have gone since: the key must still be pinned.
		if cp.Type == CheckpointType {
			if _, err := keys.Key(cp.ReceiptKey); err != nil {
				return nil, err
			}
		}
		return cp, nil
	}
	cp, err := readCheckpoint(h, keys, record, signature)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.ok == nil || len(k.ok) > 64 {
		k.ok = map[[sha256.Size]byte]*Checkpoint{}
	}
	k.ok[id] = cp
	k.mu.Unlock()
	return cp, nil
}

// Heads is what CheckStore found: the host-signed heads it held the
// store to (nil when there is none).
type Heads struct {
	// Store is the store's last checkpoint; File the one in $OA_HOME.
	Store, File *Checkpoint
}

// CheckStore holds the store to the host-signed heads: the store's last
// checkpoint and the one in $OA_HOME verify with a pinned receipt key and
// agree; the newest receipt is the head they sign; the receipt key this
// process seals with is pinned (or can still be); with counts, the chain
// holds exactly as many receipts as signed and the store no fewer runs.
// Its refusals are receipt_checkpoint_mismatch, receipt_key_unpinned and
// receipt_runs_disagree; the error is a refusal or a program fault.
// signer is the receipt key the caller seals with; counts adds the count
// of every row (CheckCounts), which the per-attempt check leaves out.
func (l *Ledger) CheckStore(ctx context.Context, cache *HeadCache, counts bool) (*Heads, error) {
	h := l.h
	signer, err := l.ReceiptSigner()
	if err != nil {
		return nil, err
	}
	var out Heads
	// The file first, then the store, then the pins. The file is written
	// after the seal's commit, so read in this order it is never ahead of
	// the store because of a seal by another process (or run) meanwhile;
	// and a receipt key is pinned, in a write of its own, before its first
	// seal, so the pins read last hold every key the two name (read first,
	// they missed a key a concurrent first seal pinned, and refused the
	// host's records as unpinned).
	fileBytes, err := readCheckpointBytes(h.Home)
	if err != nil {
		return nil, err
	}
	v, last, err := l.readHead(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := l.ReceiptKeyPins(ctx)
	if err != nil {
		return nil, err
	}
	if out.File, err = checkpointInFile(h, keys, cache, fileBytes); err != nil {
		return nil, err
	}
	if v != nil {
		if out.Store, err = cache.read(h, keys, v.Record, v.Signature); err != nil {
			return nil, err
		}
		if out.Store.Seq != v.Seq {
			return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "checkpoint #%d is stored as #%d", out.Store.Seq, v.Seq)
		}
	}
	if err := l.checkHeads(ctx, out.Store, out.File, last); err != nil {
		return nil, err
	}
	if err := checkOwnPin(ctx, h, keys, signer.KeyID()); err != nil {
		return nil, err
	}
	if counts {
		if err := l.checkCounts(ctx, out.Store, out.File); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// readHead reads the store's last checkpoint and its newest receipt in
// one statement, so one snapshot: a seal commits both together.
func (l *Ledger) readHead(ctx context.Context) (*store.Version, *ReceiptRow, error) {
	var vSeq, rSeq sql.NullInt64
	var vRec, vSig, rRec []byte
	err := l.db.QueryRowContext(ctx, `
SELECT v.seq, v.record, v.signature, r.seq, r.record FROM (SELECT 1)
LEFT JOIN (SELECT seq, record, signature FROM versions WHERE kind = ? AND key = ? ORDER BY seq DESC LIMIT 1) v ON 1
LEFT JOIN (SELECT seq, record FROM receipts ORDER BY seq DESC LIMIT 1) r ON 1`, store.KindCheckpoint, store.CheckpointKey).Scan(&vSeq, &vRec, &vSig, &rSeq, &rRec)
	if err != nil {
		return nil, nil, fmt.Errorf("store: read the receipt head: %w", err)
	}
	var v *store.Version
	var last *ReceiptRow
	if vSeq.Valid {
		v = &store.Version{Kind: store.KindCheckpoint, Key: store.CheckpointKey, Seq: vSeq.Int64, Record: store.Unpack(vRec), Signature: vSig}
	}
	if rSeq.Valid {
		last = &ReceiptRow{Seq: rSeq.Int64, Record: store.Unpack(rRec)}
	}
	return v, last, nil
}

// checkpointInFile is readCheckpointFile of the file's bytes b, with verified heads
// remembered.
func checkpointInFile(h *host.Host, keys PinnedKeys, cache *HeadCache, b []byte) (*Checkpoint, error) {
	if b == nil {
		return nil, nil
	}
	sc, err := decodeSignedCheckpoint(b)
	if err != nil {
		return nil, err
	}
	return cache.read(h, keys, sc.Record, sc.Signature)
}

// checkHeads holds the newest receipt to the store's checkpoint and the
// file's checkpoint to both. A missing file is not a disagreement: a
// crash between a seal's commit and the file's write leaves none, and the
// next seal writes it.
func (l *Ledger) checkHeads(ctx context.Context, head, file *Checkpoint, last *ReceiptRow) error {
	switch {
	case head == nil && last != nil:
		return blocking.New(blocking.ReceiptCheckpointMismatch, "the store holds receipts up to #%d but no signed checkpoint", last.Seq)
	case head == nil && file != nil:
		return blocking.New(blocking.ReceiptCheckpointMismatch, "the store holds no signed checkpoint, but %s holds checkpoint #%d", CheckpointFile, file.Seq)
	case head == nil:
		return nil
	case last == nil || last.Seq != head.Seq || ir.DigestBytes(last.Record) != head.Head:
		return blocking.New(blocking.ReceiptCheckpointMismatch, "receipt #%d, the head the host signed, is missing or another", head.Seq)
	case file == nil:
		return nil
	case file.Seq > head.Seq:
		return blocking.New(blocking.ReceiptCheckpointMismatch, "the store's last checkpoint is #%d, older than checkpoint #%d in %s", head.Seq, file.Seq, CheckpointFile)
	case file.Seq == head.Seq && file.Head != head.Head:
		return blocking.New(blocking.ReceiptCheckpointMismatch, "checkpoint #%d in %s names another head", file.Seq, CheckpointFile)
	case file.Seq < head.Seq:
		at, err := lastReceipt(ctx, l.db, `SELECT `+ReceiptColumns+` FROM receipts WHERE seq = ?`, file.Seq)
		if err != nil {
			return fmt.Errorf("store: read receipt: %w", err)
		}
		if at == nil || ir.DigestBytes(at.Record) != file.Head {
			return blocking.New(blocking.ReceiptCheckpointMismatch, "receipt #%d is not the head checkpoint #%d in %s names", file.Seq, file.Seq, CheckpointFile)
		}
	}
	return nil
}

// checkOwnPin refuses when a seal with the receipt key id would be
// refused: its pin edited, or removed while the chain names the key.
func checkOwnPin(ctx context.Context, h *host.Host, keys PinnedKeys, id string) error {
	if _, ok := keys[id]; ok {
		return nil
	}
	v, err := h.Versions().Latest(ctx, ReceiptKeyKind, id)
	if err != nil {
		return err
	}
	if v != nil {
		// Pinned since keys were read (another run's first seal) when it
		// verifies now; else it was edited.
		if _, ok := readPin(h, v); ok {
			return nil
		}
		return blocking.New(blocking.ReceiptKeyUnpinned, "the pin of receipt key %s does not verify with the host key", id)
	}
	if chainNamesKey(ctx, h, id) {
		return blocking.New(blocking.ReceiptKeyUnpinned, "the chain's checkpoints name receipt key %s but its host-signed pin is gone", id)
	}
	return nil
}

// CheckCounts is checkCounts held to the heads CheckStore found: it
// reads every row, so the coordinator makes it once per session, in the
// background.
func (l *Ledger) CheckCounts(ctx context.Context, heads *Heads) error {
	return l.checkCounts(ctx, heads.Store, heads.File)
}

// checkCounts holds the receipts to the signed heads — as many as their
// highest sequence number (no gap), which is no lower than the heads
// sign — and the runs to the most the heads counted: a row removed from
// the middle of either shows here. One statement reads one snapshot, and
// both only grow, so a seal by another process meanwhile is no
// disagreement. The runs counted are remembered (store.DB.RememberRows),
// so the next seal counts only the runs added since, not a long history
// again inside the write lock (1,000,000 runs: ~0.6 s,
// docs/PERFORMANCE.md).
func (l *Ledger) checkCounts(ctx context.Context, head, file *Checkpoint) error {
	var receipts, top, runs, lastRun int64
	db := l.db
	err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM receipts), (SELECT coalesce(max(seq), 0) FROM receipts), (SELECT count(*) FROM runs), (SELECT coalesce(max(rowid), 0) FROM runs)`).Scan(&receipts, &top, &runs, &lastRun)
	if err != nil {
		return fmt.Errorf("store: count receipts and runs: %w", err)
	}
	db.RememberRows("runs", runs, lastRun)
	var signed, signedRuns int64
	for _, cp := range []*Checkpoint{head, file} {
		if cp != nil {
			signed, signedRuns = max(signed, cp.Seq), max(signedRuns, cp.Runs)
		}
	}
	if receipts != top || top < signed {
		return blocking.New(blocking.ReceiptCheckpointMismatch, "the store holds %d receipts numbered up to #%d, the host signed #%d", receipts, top, signed)
	}
	if runs < signedRuns {
		return blocking.New(blocking.ReceiptRunsDisagree, "the store holds %d runs, fewer than the %d the host signed", runs, signedRuns)
	}
	return nil
}
