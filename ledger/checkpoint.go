package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/coalesce"
	"github.com/oa-dev/oa/internal/store"
)

// CheckpointType is the type of a head checkpoint record: signed by the
// receipt key, which a host-signed pin vouches for (see pin.go).
const CheckpointType = "oa.receipt-checkpoint/v2"

// CheckpointTypeHostSigned is the type of the checkpoints hosts signed
// with the host key before pins; they are still read, never written.
const CheckpointTypeHostSigned = "oa.receipt-checkpoint/v1"

// CheckpointFile is the copy of the latest head checkpoint kept beside
// the database under $OA_HOME, so a database removed, emptied or replaced
// by an older copy is caught: the chain must reach it.
const CheckpointFile = "receipts.checkpoint"

// maxCheckpointFile bounds the checkpoint file read.
const maxCheckpointFile = 64 << 10

// Checkpoint is the signed head of the receipt chain after receipt Seq:
// signed with the pinned receipt key in the same write as that receipt.
type Checkpoint struct {
	Type string `json:"type"`
	Host string `json:"host"`
	// Seq is the number of receipts in the chain (the head's sequence
	// number) and the checkpoint's version.
	Seq int64 `json:"seq"`
	// Head is the digest of receipt Seq's record.
	Head string `json:"head"`
	// Runs is how many runs the host had stored; runs are never removed.
	Runs int64 `json:"runs"`
	// Deployment is the deployment of the head receipt.
	Deployment string `json:"deployment"`
	// ReceiptKey is the key id of the receipt key: the host key pins it.
	ReceiptKey string    `json:"receiptKey"`
	At         time.Time `json:"at"`
}

// SignedCheckpoint is a checkpoint's exact signed bytes, as the file in
// $OA_HOME and audit bundles hold it: a host signed copy.
type SignedCheckpoint = host.SignedCopy

// ReadCheckpoint verifies a signed checkpoint and decodes it strictly:
// one of type CheckpointType with the receipt key it names, which must be
// pinned by a host-signed pin; an older host-signed one with the host
// key. The record is decoded (bounded, strictly) before it is verified
// only to learn which key to verify it with; nothing in it is believed
// until then.
func (l *Ledger) ReadCheckpoint(ctx context.Context, record, signature []byte) (*Checkpoint, error) {
	h := l.h
	keys, err := l.ReceiptKeyPins(ctx)
	if err != nil {
		return nil, err
	}
	return readCheckpoint(h, keys, record, signature)
}

// readCheckpoint is ReadCheckpoint with the host's pins already read.
func readCheckpoint(h *host.Host, keys PinnedKeys, record, signature []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if len(record) > maxCheckpointFile || canonical.DecodeStrict(record, &cp) != nil || cp.Seq < 1 || cp.Host != h.Policy.Host {
		return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint is not this host's checkpoint record")
	}
	switch cp.Type {
	case CheckpointType:
		key, err := keys.Key(cp.ReceiptKey)
		if err != nil {
			return nil, err
		}
		if key.VerifyBytes(signature, record) != nil {
			return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint does not verify with the receipt key the host pinned")
		}
	case CheckpointTypeHostSigned:
		if h.VerifyRecord(record, signature) != nil {
			return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint does not verify with the host key")
		}
	default:
		return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint is not this host's checkpoint record")
	}
	return &cp, nil
}

// decodeCheckpointFile reads the checkpoint file's bytes (nil: none).
func decodeCheckpointFile(h *host.Host, keys PinnedKeys, b []byte) (*Checkpoint, error) {
	if b == nil {
		return nil, nil
	}
	sc, err := decodeSignedCheckpoint(b)
	if err != nil {
		return nil, err
	}
	return readCheckpoint(h, keys, sc.Record, sc.Signature)
}

// decodeSignedCheckpoint decodes the checkpoint file's bytes, bounded and
// strictly, without verifying them.
func decodeSignedCheckpoint(b []byte) (*SignedCheckpoint, error) {
	var sc SignedCheckpoint
	if len(b) > maxCheckpointFile || canonical.DecodeStrict(b, &sc) != nil {
		return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint file %s is malformed", CheckpointFile)
	}
	return &sc, nil
}

// readCheckpointBytes reads $OA_HOME's checkpoint file, nil when there is
// none.
func readCheckpointBytes(home string) ([]byte, error) {
	f, err := os.Open(filepath.Join(home, CheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Bounded: one byte more than a checkpoint may have is enough for its
	// decoding to refuse a file that is not one.
	return io.ReadAll(io.LimitReader(f, maxCheckpointFile+1))
}

// readCheckpointFile reads and verifies $OA_HOME's checkpoint, nil when
// there is none.
func readCheckpointFile(h *host.Host, keys PinnedKeys) (*Checkpoint, error) {
	b, err := readCheckpointBytes(h.Home)
	if err != nil || b == nil {
		return nil, err
	}
	return decodeCheckpointFile(h, keys, b)
}

// checkpointFile writes the copy of the checkpoint a seal signs beside
// $OA_HOME's checkpoint file while the seal's transaction commits
// (prepare, in the background: the copy's sync and the commit's overlap),
// and puts it in place once it committed (keep); a seal that did not
// commit leaves the file as it was. The file only moves forward, so two
// sealers finishing out of order leave the later head, and it is never
// ahead of the store: it is put in place after the commit. Its folder is
// not synced, so after a crash it may read as the copy before, which a
// file that is a floor allows.
//
// Only the newest committed copy matters, so seals that commit together
// do not each write one: a copy is staged only by a seal that is the only
// one under way in this process and while no other copy is being staged;
// the checkpoints of the others, once committed, are written together —
// the newest of them, once (copyWriter). At 32 runs in flight that was a
// file created, written and synced per run. A lone seal still stages its
// copy while it commits.
type checkpointFile struct {
	home    string
	pending []chan preparedCopy // one per copy staged: a seal's write may run again
	// last is the last checkpoint signed, and staged whether its copy is
	// the last of pending.
	last   *store.Version
	staged bool
}

type preparedCopy struct {
	copy *host.StagedCopy
	err  error
}

// prepare starts writing the copy of checkpoint v, unless another copy is
// being written for this home.
func (f *checkpointFile) prepare(v *store.Version) {
	w := copyWriterOf(f.home)
	if f.last == nil {
		w.sealing.Add(1) // until keep
	}
	f.last, f.staged = v, false
	if w.sealing.Load() > 1 || !w.staging.CompareAndSwap(false, true) {
		return
	}
	f.staged = true
	done := make(chan preparedCopy, 1)
	f.pending = append(f.pending, done)
	go func() {
		c, err := host.StageSignedCopy(f.home, CheckpointFile, "seq", v)
		w.staging.Store(false)
		done <- preparedCopy{c, err}
	}()
}

// keep puts the last checkpoint signed in place when committed is true —
// its staged copy, or else written with the others committed meanwhile —
// and discards every other copy.
func (f *checkpointFile) keep(committed bool) error {
	var err error
	for i, done := range f.pending {
		p := <-done
		last := committed && f.staged && i == len(f.pending)-1
		switch {
		case last && p.err != nil:
			err = p.err
		case last:
			err = p.copy.Keep(f.home)
		case p.err == nil:
			p.copy.Discard()
		}
	}
	f.pending = nil
	if f.last == nil {
		return err
	}
	w := copyWriterOf(f.home)
	w.sealing.Add(-1)
	if committed && !f.staged {
		err = w.write(f.last)
	}
	return err
}

// copyWriter writes the checkpoint file of one home for this process's
// seals: staging is set while a seal's copy is staged, and the copies of
// committed seals waiting are written together, the newest of them.
type copyWriter struct {
	home string
	// put writes a copy and puts it in place (keepCopy).
	put func(home string, v *store.Version) error
	// sealing counts the seals between their first copy signed and keep;
	// staging is set while a copy is staged.
	sealing atomic.Int64
	staging atomic.Bool
	waiting coalesce.Batches[waitingCopy]
}

type waitingCopy struct {
	v    *store.Version
	done chan error
}

// copyWriters holds the copyWriter of each home this process sealed in.
var copyWriters sync.Map

func copyWriterOf(home string) *copyWriter {
	if w, ok := copyWriters.Load(home); ok {
		return w.(*copyWriter)
	}
	w, _ := copyWriters.LoadOrStore(home, newCopyWriter(home, keepCopy))
	return w.(*copyWriter)
}

func newCopyWriter(home string, put func(string, *store.Version) error) *copyWriter {
	w := &copyWriter{home: home, put: put}
	w.waiting.Run = w.writeNewest
	return w
}

// write puts committed checkpoint v, or a later committed one, in the
// file, and returns once it is there.
func (w *copyWriter) write(v *store.Version) error {
	c := waitingCopy{v: v, done: make(chan error, 1)}
	w.waiting.Add(c)
	return <-c.done
}

// writeNewest writes the newest of a batch of copies. Every copy waiting
// is of a committed checkpoint, so the newest holds for all of them.
func (w *copyWriter) writeNewest(batch []waitingCopy) {
	newest := batch[0].v
	for _, c := range batch[1:] {
		if c.v.Seq > newest.Seq {
			newest = c.v
		}
	}
	err := w.put(w.home, newest)
	for _, c := range batch {
		c.done <- err
	}
}

// keepCopy writes the copy of v and puts it in place (unless a later one
// is there).
func keepCopy(home string, v *store.Version) error {
	c, err := host.StageSignedCopy(home, CheckpointFile, "seq", v)
	if err != nil {
		return err
	}
	return c.Keep(home)
}

// extendsCheckpoints refuses to seal receipt rec unless the chain it
// extends reaches the store's last checkpoint and the file's: new runs
// never extend a truncated chain.
func extendsCheckpoints(h *host.Host, keys PinnedKeys, rec *ReceiptRow, prev *store.Version, file *Checkpoint) error {
	if file != nil && (file.Seq >= rec.Seq || file.Seq == rec.Seq-1 && file.Head != rec.PrevDigest) {
		return blocking.New(blocking.ReceiptCheckpointMismatch, "the chain is shorter than, or differs from, checkpoint #%d in %s; no receipt is appended", file.Seq, CheckpointFile)
	}
	if rec.Seq == 1 {
		if prev != nil {
			return blocking.New(blocking.ReceiptCheckpointMismatch, "the chain is empty but the host signed checkpoint #%d", prev.Seq)
		}
		return nil
	}
	if prev == nil || prev.Seq != rec.Seq-1 {
		return blocking.New(blocking.ReceiptCheckpointMismatch, "receipt #%d has no signed checkpoint; no receipt is appended", rec.Seq-1)
	}
	cp, err := readCheckpoint(h, keys, prev.Record, prev.Signature)
	if err != nil {
		return err
	}
	if cp.Head != rec.PrevDigest {
		return blocking.New(blocking.ReceiptCheckpointMismatch, "checkpoint #%d names another head; no receipt is appended", cp.Seq)
	}
	return nil
}

// readSecret reads the coordinator secret without making one (nil when
// the host has none).
func readSecret(home string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(home, SecretFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// detailOf is a refusal's detail (or the error's text for a fault).
func detailOf(err error) string {
	if l := blocking.Refusals(err); len(l) > 0 {
		return l[0].Detail
	}
	return err.Error()
}

type brokenFunc func(seq int64, code blocking.Code, format string, args ...any) *ChainReport

// decodeRunUnkeyed decodes a stored run with its MAC checked when key is
// given, else only its shape and row.
func decodeRunUnkeyed(key []byte, row *RunRow) (*RunRecord, error) {
	if key != nil {
		return DecodeRunRow(key, row)
	}
	var r RunRecord
	if err := json.Unmarshal(row.State, &r); err != nil || r.RunID != row.RunID || r.Deployment != row.Deployment || r.RequestID != row.RequestID {
		return nil, RunTampered("the run record does not decode or names another run")
	}
	return &r, nil
}
