package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/telemetry"
)

// ReceiptType is the type of a receipt record.
const ReceiptType = "oa.receipt/v1"

// Receipt is the signed record of one terminal run attempt, chained to the
// receipt before it by that receipt's digest.
type Receipt struct {
	Type       string `json:"type"`
	Host       string `json:"host"`
	Seq        int64  `json:"seq"`
	Prev       string `json:"prev"`
	RunID      string `json:"runId"`
	Deployment string `json:"deployment"`
	Job        string `json:"job"`
	Attempt    int    `json:"attempt"`
	// Fingerprint is the request's keyed fingerprint, never its inputs.
	Fingerprint     string            `json:"fingerprint"`
	Outcome         contract.Outcome  `json:"outcome"`
	Reason          contract.Reason   `json:"reason"`
	Evidence        []string          `json:"evidence"`
	EvidenceDigests map[string]string `json:"evidenceDigests"`
	// Skipped lists the steps a person chose to skip and the run passed
	// over; absent when none was.
	Skipped       []string  `json:"skipped,omitempty"`
	PlanDigest    string    `json:"planDigest"`
	BindingDigest string    `json:"bindingDigest"`
	At            time.Time `json:"at"`
}

// SealRun appends the receipt of the run's current attempt, signed by
// the host's receipt key (ReceiptSigner), when that attempt is terminal; records its
// digest in the run and appends the head checkpoint, in one write; then it
// writes the checkpoint file. The receipt key is pinned by the host key
// first, once per key on a host. An attempt already sealed, or not
// terminal, is left as it is. A chain shorter than the last checkpoint is
// never extended. It returns the run as stored.
func (l *Ledger) SealRun(ctx context.Context, runID string, now time.Time) (*RunRecord, error) {
	r, err := l.ReadRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if r.Status != RunTerminal || r.Receipt != "" {
		return r, nil
	}
	return l.FinishRun(ctx, runID, now, nil)
}

// FinishRun ends a run and seals it in the same write transaction: end
// gets the run as stored and makes it terminal, or returns an error and
// nothing is written; the receipt of the state it leaves is then sealed as
// SealRun seals one. So a run's outcome and its receipt are one durable
// point: no reader ever finds the run ended and unsealed. The receipt's
// leaf in the host's transparency log and the log's new signed checkpoint
// are in that transaction too (log.go). With end nil it
// seals the run as stored. FinishRun fails with ErrAttemptSealed when end
// ended an attempt the chain holds a receipt of already (nothing is kept).
func (l *Ledger) FinishRun(ctx context.Context, runID string, now time.Time, end func(*RunRecord) error) (sealed *RunRecord, err error) {
	ctx, span := telemetry.StartSeal(ctx, runID)
	defer func() { span.Sealed(sealedDigest(sealed)); span.End(telemetry.Code(err)) }()
	h := l.h
	key, err := l.Secret()
	if err != nil {
		return nil, err
	}
	signer, err := l.ReceiptSigner()
	if err != nil {
		return nil, err
	}
	keys, err := l.pinnedWith(ctx, signer, now)
	if err != nil {
		return nil, err
	}
	floor, err := readCheckpointFile(h, keys)
	if err != nil {
		return nil, err
	}
	logKey, err := l.LogKey()
	if err != nil {
		return nil, err
	}
	at := now.UTC().Truncate(time.Millisecond)
	var r, out *RunRecord
	attempt := func(state []byte) (int, error) {
		cur, err := DecodeRun(key, state)
		if err != nil {
			return 0, err
		}
		if end != nil {
			if err := end(cur); err != nil {
				return 0, err
			}
		}
		if cur.Status != RunTerminal || cur.Receipt != "" {
			return 0, errNothingToSeal
		}
		r = cur
		return cur.Attempt, nil
	}
	build := func(seq int64, prev *ReceiptRow) ([]byte, []byte, string, error) {
		rec := Receipt{Type: ReceiptType, Host: h.Policy.Host, Seq: seq, RunID: r.RunID, Deployment: r.Deployment, Job: r.Workflow,
			Attempt: r.Attempt, Fingerprint: r.Fingerprint, Outcome: r.Outcome, Reason: r.Reason, Evidence: r.Evidence,
			EvidenceDigests: r.Digests, Skipped: r.Skipped, PlanDigest: r.PlanDigest, BindingDigest: r.Binding, At: at}
		if prev != nil {
			rec.Prev = ir.DigestBytes(prev.Record)
		}
		b, err := canonical.Marshal(rec)
		if err != nil {
			return nil, nil, "", err
		}
		sig, err := signer.SignBytes(b)
		return b, sig, rec.Prev, err
	}
	mark := func(record []byte) ([]byte, error) {
		r.Receipt = ir.DigestBytes(record)
		out = r
		return r.Encode(key)
	}
	file := &checkpointFile{home: h.Home}
	checkpoint := func(rec *ReceiptRow, runs int64, prev *store.Version) ([]byte, []byte, error) {
		if err := extendsCheckpoints(h, keys, rec, prev, floor); err != nil {
			return nil, nil, err
		}
		b, err := canonical.Marshal(Checkpoint{Type: CheckpointType, Host: h.Policy.Host, Seq: rec.Seq, Head: ir.DigestBytes(rec.Record), Runs: runs,
			Deployment: r.Deployment, ReceiptKey: signer.KeyID(), At: at})
		if err != nil {
			return nil, nil, err
		}
		sig, err := signer.SignBytes(b)
		if err == nil {
			file.prepare(&store.Version{Kind: store.KindCheckpoint, Key: store.CheckpointKey, Seq: rec.Seq, Record: b, Signature: sig})
		}
		return b, sig, err
	}
	leaf := func(tx *sql.Tx, rec *ReceiptRow) error { return appendLeaf(ctx, tx, logKey, rec) }
	_, cp, err := l.Tables().seal(ctx, runID, attempt, build, mark, checkpoint, leaf)
	if ferr := file.keep(err == nil && cp != nil); err == nil && ferr != nil {
		return nil, fmt.Errorf("receipt checkpoint file: %w", ferr)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case out != nil:
		return out, nil
	case end != nil && r != nil:
		return nil, ErrAttemptSealed
	}
	return l.ReadRun(ctx, runID) // sealed meanwhile by another caller, or nothing to seal
}

// pinnedWith returns the host's pinned receipt keys, signer's among them.
// The checkpoint is signed with the receipt key; the host key signs only
// the key's pin, once per key on a host (see pin.go): the pins are read
// once, and only a key not among them is pinned (or its missing pin
// refused) by PinReceiptKey, after which they are read again.
func (l *Ledger) pinnedWith(ctx context.Context, signer *signing.Signer, now time.Time) (PinnedKeys, error) {
	keys, err := l.ReceiptKeyPins(ctx)
	if err != nil || keys[signer.KeyID()] != nil {
		return keys, err
	}
	if err := pinReceiptKey(ctx, l.h, signer, now); err != nil {
		return nil, err
	}
	return l.ReceiptKeyPins(ctx)
}

// ErrAttemptSealed is FinishRun's error for a run whose ended attempt the
// chain already holds a receipt of: the run's row is older than its
// receipts, and nothing was written.
var ErrAttemptSealed = errors.New("ledger: the run's attempt is sealed already; nothing was written")

// ChainReport is the result of checking the receipt chain, its signed
// checkpoints and its agreement with the runs.
type ChainReport struct {
	Receipts int  `json:"receipts"`
	Runs     int  `json:"runs"`
	OK       bool `json:"ok"`
	// FirstBroken is the sequence number of the first receipt that fails
	// (0 when the break is not one receipt's, or when none fails); Code
	// names the broken link and Problem says how it fails.
	FirstBroken int64         `json:"firstBroken,omitempty"`
	Code        blocking.Code `json:"code,omitempty"`
	Problem     string        `json:"problem,omitempty"`
	// Head is the digest of the last receipt.
	Head string `json:"head,omitempty"`
	// Checkpoint is the host-signed head checkpoint the chain reaches.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Incremental is set when the check started from the head the last
	// verify reached (VerifyReceiptsWith); Verified is how many receipts
	// it checked in full then.
	Incremental bool `json:"incremental,omitempty"`
	Verified    int  `json:"verified,omitempty"`
}

// Err is the report's refusal, nil when the chain holds.
func (r *ChainReport) Err() error {
	if r.OK {
		return nil
	}
	if r.FirstBroken > 0 {
		return blocking.New(r.Code, "receipt #%d: %s", r.FirstBroken, r.Problem)
	}
	return blocking.New(r.Code, "%s", r.Problem)
}

// VerifyReceipts checks the whole chain: every signature with the receipt
// key the host's checkpoint pins, every sequence number, every link to the
// receipt before; that the chain reaches the host-signed checkpoints in
// the store and in $OA_HOME; that every receipt names a binding that
// verifies; and that runs (their MACs checked) and receipts agree.
func (l *Ledger) VerifyReceipts(ctx context.Context) (*ChainReport, error) {
	h := l.h
	key, err := readSecret(h.Home)
	if err != nil {
		return nil, err
	}
	v, err := receiptVerifier(h.Home)
	if err != nil {
		return nil, err
	}
	file, err := os.ReadFile(filepath.Join(h.Home, CheckpointFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	report, err := l.CheckChain(ctx, ChainInputs{ReceiptKey: v, RunKey: key, CheckpointFile: file})
	if err != nil || !report.OK {
		return report, err
	}
	report.Verified = report.Receipts
	return checkRevocations(ctx, h, report)
}

// checkRevocations holds the revocations to the host's signed revocation
// head (one removed would put a revoked release back in service), and
// marks report broken when they disagree.
func checkRevocations(ctx context.Context, h *host.Host, report *ChainReport) (*ChainReport, error) {
	if err := admit.CheckRevocations(ctx, h); err != nil {
		var why *blocking.Error
		if !errors.As(err, &why) {
			return nil, err
		}
		report.OK, report.Code, report.Problem = false, why.Code, why.Detail
	}
	return report, nil
}

// sealedDigest is the digest of the receipt sealed for r, if any.
func sealedDigest(r *RunRecord) string {
	if r == nil {
		return ""
	}
	return r.Receipt
}
