package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
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
// $OA_HOME and audit bundles hold it.
type SignedCheckpoint struct {
	Record    []byte `json:"record"`
	Signature []byte `json:"signature"`
}

// ReadCheckpoint verifies a signed checkpoint and decodes it strictly:
// one of type CheckpointType with the receipt key it names, which must be
// pinned by a host-signed pin; an older host-signed one with the host
// key. The record is decoded (bounded, strictly) before it is verified
// only to learn which key to verify it with; nothing in it is believed
// until then.
func ReadCheckpoint(ctx context.Context, h *host.Host, record, signature []byte) (*Checkpoint, error) {
	keys, err := receiptKeyPins(ctx, h)
	if err != nil {
		return nil, err
	}
	return readCheckpoint(h, keys, record, signature)
}

// readCheckpoint is ReadCheckpoint with the host's pins already read.
func readCheckpoint(h *host.Host, keys pinnedKeys, record, signature []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if len(record) > maxCheckpointFile || canonical.DecodeStrict(record, &cp) != nil || cp.Seq < 1 || cp.Host != h.Policy.Host {
		return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "the checkpoint is not this host's checkpoint record")
	}
	switch cp.Type {
	case CheckpointType:
		key, err := keys.key(cp.ReceiptKey)
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
func decodeCheckpointFile(h *host.Host, keys pinnedKeys, b []byte) (*Checkpoint, error) {
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
	b, err := os.ReadFile(filepath.Join(home, CheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// readCheckpointFile reads and verifies $OA_HOME's checkpoint, nil when
// there is none.
func readCheckpointFile(h *host.Host, keys pinnedKeys) (*Checkpoint, error) {
	b, err := readCheckpointBytes(h.Home)
	if err != nil || b == nil {
		return nil, err
	}
	return decodeCheckpointFile(h, keys, b)
}

// writeCheckpointFile replaces $OA_HOME's checkpoint with v, atomically
// (a temporary file renamed into place), unless the file already holds a
// later one: it only moves forward, so two sealers finishing out of order
// leave the later head.
func writeCheckpointFile(home string, v *store.Version) error {
	path := filepath.Join(home, CheckpointFile)
	if b, err := os.ReadFile(path); err == nil {
		var sc SignedCheckpoint
		var cur struct {
			Seq int64 `json:"seq"`
		}
		if canonical.DecodeStrict(b, &sc) == nil && json.Unmarshal(sc.Record, &cur) == nil && cur.Seq >= v.Seq {
			return nil
		}
	}
	data, err := canonical.Marshal(SignedCheckpoint{Record: v.Record, Signature: v.Signature})
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// extendsCheckpoints refuses to seal receipt rec unless the chain it
// extends reaches the store's last checkpoint and the file's: new runs
// never extend a truncated chain.
func extendsCheckpoints(h *host.Host, keys pinnedKeys, rec *store.Receipt, prev *store.Version, file *Checkpoint) error {
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

// ChainInputs are what CheckChain trusts besides the host: the receipt
// verifier (whose key id must be the one the host's checkpoint pins), the
// run MAC key (nil skips the MAC check: an auditor has no host secret)
// and the bytes of the checkpoint file (nil when there is none).
type ChainInputs struct {
	ReceiptKey     *signing.Verifier
	RunKey         []byte
	CheckpointFile []byte
}

// CheckChain checks the host's receipt chain, checkpoints, bindings and
// runs (see VerifyReceipts); it is what `oa audit verify` runs on the
// records of a bundle. The first broken link is named in the report.
func CheckChain(ctx context.Context, h *host.Host, in ChainInputs) (*ChainReport, error) {
	rows, err := storeOf(h).Receipts(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := storeOf(h).Runs(ctx)
	if err != nil {
		return nil, err
	}
	report := &ChainReport{Receipts: len(rows), Runs: len(runs), OK: true}
	broken := func(seq int64, code blocking.Code, format string, args ...any) *ChainReport {
		report.OK, report.FirstBroken, report.Code, report.Problem = false, seq, code, fmt.Sprintf(format, args...)
		return report
	}
	keys, err := receiptKeyPins(ctx, h)
	if err != nil {
		return nil, err
	}
	head, err := latestCheckpoint(ctx, h, keys)
	if err != nil {
		return broken(0, blocking.ReceiptCheckpointMismatch, "%s", detailOf(err)), nil
	}
	file, err := decodeCheckpointFile(h, keys, in.CheckpointFile)
	if err != nil {
		return broken(0, blocking.ReceiptCheckpointMismatch, "%s", detailOf(err)), nil
	}
	report.Checkpoint = head
	if head == nil && file == nil && len(rows) == 0 {
		return checkRuns(ctx, h, report, runs, nil, nil, in.RunKey, broken)
	}
	pinned := head
	if pinned == nil {
		pinned = file
	}
	if in.ReceiptKey == nil || in.ReceiptKey.KeyID() != pinned.ReceiptKey {
		return broken(0, blocking.ReceiptKeyUnpinned, "the receipt public key %s is missing or not the key checkpoint #%d pins", ReceiptPubFile, pinned.Seq), nil
	}
	receipts := make([]Receipt, len(rows))
	digests := make([]string, len(rows))
	signed := verifyAll(in.ReceiptKey, rows)
	prev := ""
	for i, row := range rows {
		if row.Seq != int64(i+1) {
			return broken(int64(i+1), blocking.ReceiptChainBroken, "receipt #%d is missing", i+1), nil
		}
		if !signed[i] {
			return broken(row.Seq, blocking.ReceiptChainBroken, "the signature does not verify with the receipt key"), nil
		}
		rec := &receipts[i]
		if err := canonical.DecodeStrict(row.Record, rec); err != nil || rec.Type != ReceiptType || rec.Seq != row.Seq || rec.RunID != row.RunID || rec.Attempt != row.Attempt || rec.Host != h.Policy.Host {
			return broken(row.Seq, blocking.ReceiptChainBroken, "the record does not match its row"), nil
		}
		if rec.Prev != prev || row.PrevDigest != prev {
			return broken(row.Seq, blocking.ReceiptChainBroken, "it does not link to receipt #%d", row.Seq-1), nil
		}
		prev = ir.DigestBytes(row.Record)
		digests[i] = prev
	}
	report.Head = prev
	switch {
	case head == nil:
		return broken(0, blocking.ReceiptCheckpointMismatch, "the store holds no signed checkpoint for the %d receipts", len(rows)), nil
	case head.Seq != int64(len(rows)) || head.Head != prev:
		return broken(0, blocking.ReceiptCheckpointMismatch, "the chain has %d receipts but the host's last checkpoint is #%d with another head", len(rows), head.Seq), nil
	case file == nil:
		return broken(0, blocking.ReceiptCheckpointMismatch, "the checkpoint file %s is missing", CheckpointFile), nil
	case file.Seq > int64(len(rows)):
		return broken(0, blocking.ReceiptCheckpointMismatch, "the chain has %d receipts, fewer than checkpoint #%d in %s", len(rows), file.Seq, CheckpointFile), nil
	case file.Head != ir.DigestBytes(rows[file.Seq-1].Record):
		return broken(file.Seq, blocking.ReceiptCheckpointMismatch, "the receipt is not the head checkpoint #%d in %s names", file.Seq, CheckpointFile), nil
	}
	if r := checkBindings(ctx, h, receipts, broken); r != nil {
		return r, nil
	}
	return checkRuns(ctx, h, report, runs, receipts, digests, in.RunKey, broken)
}

// verifyAll verifies every receipt's signature with key, on every core:
// the signatures are what a long chain's check costs. ok[i] is row i's.
func verifyAll(key *signing.Verifier, rows []store.Receipt) []bool {
	ok := make([]bool, len(rows))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(rows)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(rows); i += workers {
				ok[i] = key.VerifyBytes(rows[i].Signature, rows[i].Record) == nil
			}
		}()
	}
	wg.Wait()
	return ok
}

// detailOf is a refusal's detail (or the error's text for a fault).
func detailOf(err error) string {
	if l := blocking.Refusals(err); len(l) > 0 {
		return l[0].Detail
	}
	return err.Error()
}

// latestCheckpoint is the store's last checkpoint, verified; nil for none.
func latestCheckpoint(ctx context.Context, h *host.Host, keys pinnedKeys) (*Checkpoint, error) {
	v, err := h.Versions().Latest(ctx, store.KindCheckpoint, store.CheckpointKey)
	if err != nil || v == nil {
		return nil, err
	}
	cp, err := readCheckpoint(h, keys, v.Record, v.Signature)
	if err != nil {
		return nil, err
	}
	if cp.Seq != v.Seq {
		return nil, blocking.New(blocking.ReceiptCheckpointMismatch, "checkpoint #%d is stored as #%d", cp.Seq, v.Seq)
	}
	return cp, nil
}

type brokenFunc func(seq int64, code blocking.Code, format string, args ...any) *ChainReport

// checkBindings holds every receipt to a binding of its deployment that
// verifies: its binding digest names one, its plan digest is that
// binding's plan.
func checkBindings(ctx context.Context, h *host.Host, receipts []Receipt, broken brokenFunc) *ChainReport {
	history := map[string]map[string]*bind.Binding{}
	for _, rec := range receipts {
		known, ok := history[rec.Deployment]
		if !ok {
			var err error
			if known, err = bind.History(ctx, h, rec.Deployment); err != nil {
				return broken(rec.Seq, blocking.ReceiptBindingUnverified, "the bindings of its deployment cannot be read")
			}
			history[rec.Deployment] = known
		}
		b := known[rec.BindingDigest]
		if b == nil || b.PlanDigest != rec.PlanDigest {
			return broken(rec.Seq, blocking.ReceiptBindingUnverified, "it names no host-signed binding of deployment %s with its plan", rec.Deployment)
		}
	}
	return nil
}

// checkRuns holds runs and receipts to each other: every run's MAC (when
// key is given), every terminal run's receipt in the chain for its run
// and attempt, every receipt's run present, and no fewer runs than the
// host signed.
func checkRuns(ctx context.Context, h *host.Host, report *ChainReport, runs []store.Run, receipts []Receipt, digests []string, key []byte, broken brokenFunc) (*ChainReport, error) {
	if report.Checkpoint != nil && int64(len(runs)) < report.Checkpoint.Runs {
		return broken(0, blocking.ReceiptRunsDisagree, "the store holds %d runs, fewer than the %d checkpoint #%d signed", len(runs), report.Checkpoint.Runs, report.Checkpoint.Seq), nil
	}
	byDigest := map[string]*Receipt{}
	for i := range receipts {
		byDigest[digests[i]] = &receipts[i]
	}
	attempts := map[string]int{}
	for i := range runs {
		r, err := decodeRunUnkeyed(key, &runs[i])
		if err != nil {
			return broken(0, blocking.RunRecordTampered, "run %d: %s", i+1, detailOf(err)), nil
		}
		attempts[r.RunID] = r.Attempt
		if r.Receipt == "" {
			continue
		}
		rec := byDigest[r.Receipt]
		if rec == nil || rec.RunID != r.RunID || rec.Attempt != r.Attempt || rec.Outcome != r.Outcome || rec.Reason != r.Reason {
			return broken(0, blocking.ReceiptRunsDisagree, "run %d names a receipt the chain does not hold for it", i+1), nil
		}
	}
	for _, rec := range receipts {
		if a, ok := attempts[rec.RunID]; !ok || a < rec.Attempt {
			return broken(rec.Seq, blocking.ReceiptRunsDisagree, "its run is missing or older than the receipt"), nil
		}
	}
	return report, nil
}

// decodeRunUnkeyed decodes a stored run with its MAC checked when key is
// given, else only its shape and row.
func decodeRunUnkeyed(key []byte, row *store.Run) (*runState, error) {
	if key != nil {
		return decodeRow(key, row)
	}
	var r runState
	if err := json.Unmarshal(row.State, &r); err != nil || r.RunID != row.RunID || r.Deployment != row.Deployment || r.RequestID != row.RequestID {
		return nil, errRunTampered("the run record does not decode or names another run")
	}
	return &r, nil
}
