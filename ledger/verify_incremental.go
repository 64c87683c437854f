package ledger

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
)

// VerifiedFile records, under $OA_HOME, the host-signed head the last
// successful `oa receipts verify` reached, authenticated with the host MAC
// (the coordinator secret), so the next verify starts from it instead of
// from receipt #1.
const VerifiedFile = "receipts.verified"

// verifiedMACDomain separates the mark's MAC from every other use of the
// secret.
const verifiedMACDomain = "oa.receipts-verified/v1\n"

// maxVerifiedFile bounds the mark's read.
const maxVerifiedFile = 4 << 10

// verifiedMark is the content of VerifiedFile: the chain was verified up
// to receipt Seq with digest Head, and the runs up to rowid RunRowID.
type verifiedMark struct {
	Seq      int64     `json:"seq"`
	Head     string    `json:"head"`
	RunRowID int64     `json:"runRowId"`
	At       time.Time `json:"at"`
	MAC      string    `json:"mac,omitempty"`
}

func (m verifiedMark) mac(key []byte) string {
	m.MAC = ""
	b, _ := json.Marshal(m)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(verifiedMACDomain))
	h.Write(b)
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// readMark reads the last verify's mark; nil when there is none or it
// does not carry this host's MAC (a full verify is made then).
func readMark(home string, key []byte) *verifiedMark {
	b, err := os.ReadFile(filepath.Join(home, VerifiedFile))
	if err != nil || len(b) > maxVerifiedFile {
		return nil
	}
	var m verifiedMark
	if canonical.DecodeStrict(b, &m) != nil || m.Seq < 0 || m.RunRowID < 0 || !hmac.Equal([]byte(m.MAC), []byte(m.mac(key))) {
		return nil
	}
	return &m
}

// writeMark records a verify's mark (best effort: without it, the next
// verify is full).
func writeMark(home string, key []byte, m verifiedMark) {
	m.MAC = m.mac(key)
	if b, err := canonical.Marshal(m); err == nil {
		_ = atomicfile.Write(filepath.Join(home, VerifiedFile), b, 0o600)
	}
}

// VerifyOptions are the settings of VerifyReceiptsWith.
type VerifyOptions struct {
	// Full checks every receipt and run from the first, on every core,
	// whatever an earlier verify checked.
	Full bool
}

// VerifyReceiptsWith is VerifyReceipts, by default incremental: from the
// host-signed head the last successful verify reached (VerifiedFile), it
// checks the heads (store and file), that the receipts and runs are as
// many as signed, that every receipt up to the mark still hashes to the
// digest the next one links to (so none was edited, without verifying
// their signatures again), then every receipt after it in full
// (signature, link, binding) and the runs stored or sealed since (MAC,
// receipt). What it does not re-check are runs stored before the mark
// and edited in place (the coordinator checks a run's MAC before acting
// on it) and bindings removed since: a full verify (Full, `oa receipts
// verify --full`) does. A host
// with no mark, or without its coordinator secret, or whose mark is more
// than maxIncremental receipts or runs behind, is verified in full.
func (l *Ledger) VerifyReceiptsWith(ctx context.Context, opts VerifyOptions) (*ChainReport, error) {
	h := l.h
	key, err := readSecret(h.Home)
	if err != nil {
		return nil, err
	}
	var mark *verifiedMark
	if key != nil && !opts.Full {
		mark = readMark(h.Home, key)
	}
	if mark != nil {
		far, err := l.farBehind(ctx, mark)
		if err != nil {
			return nil, err
		}
		if far {
			mark = nil
		}
	}
	var runTop int64
	if err := l.db.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM runs`).Scan(&runTop); err != nil {
		return nil, err
	}
	var report *ChainReport
	if mark == nil {
		report, err = l.VerifyReceipts(ctx)
	} else {
		report, err = l.verifyFrom(ctx, key, mark)
	}
	if err != nil || !report.OK || key == nil {
		return report, err
	}
	seq := int64(0)
	if report.Checkpoint != nil {
		seq = report.Checkpoint.Seq
	}
	writeMark(h.Home, key, verifiedMark{Seq: seq, Head: report.Head, RunRowID: runTop, At: time.Now().UTC().Truncate(time.Second)})
	return report, nil
}

// maxIncremental bounds what an incremental verify holds in memory: the
// receipts sealed and the runs stored since the mark, about 5 KB each (a
// mark 100,000 receipts behind on a host with a million runs: 576 MB; 400,000
// behind: 2.1 GB). A mark further behind is verified in full instead,
// which streams whatever the history (60 MB at a million receipts) and
// checks everything the incremental verify does, and more.
var maxIncremental int64 = 16384

// farBehind reports whether more receipts or runs than maxIncremental
// were added since mark. A chain shorter than the mark is not far
// behind: the incremental verify names that.
func (l *Ledger) farBehind(ctx context.Context, mark *verifiedMark) (bool, error) {
	var top, runs int64
	err := l.db.QueryRowContext(ctx, `SELECT (SELECT coalesce(max(seq), 0) FROM receipts), (SELECT count(*) FROM (SELECT 1 FROM runs WHERE rowid > ? LIMIT ?))`,
		mark.RunRowID, maxIncremental+1).Scan(&top, &runs)
	if err != nil {
		return false, fmt.Errorf("store: count what was added since the last verify: %w", err)
	}
	return top-mark.Seq > maxIncremental || runs > maxIncremental, nil
}

// verifyFrom is the incremental verify from mark.
func (l *Ledger) verifyFrom(ctx context.Context, key []byte, mark *verifiedMark) (*ChainReport, error) {
	h, db := l.h, l.db
	report := &ChainReport{OK: true, Incremental: true}
	broken := func(seq int64, code blocking.Code, format string, args ...any) *ChainReport {
		report.OK, report.FirstBroken, report.Code, report.Problem = false, seq, code, fmt.Sprintf(format, args...)
		return report
	}
	refused := func(err error) (*ChainReport, error) {
		var why *blocking.Error
		if !errors.As(err, &why) {
			return nil, err
		}
		return broken(0, why.Code, "%s", why.Detail), nil
	}
	keys, err := l.ReceiptKeyPins(ctx)
	if err != nil {
		return nil, err
	}
	file, err := readCheckpointFile(h, keys) // first: never ahead of the store
	if err != nil {
		return refused(err)
	}
	hv, last, err := l.readHead(ctx)
	if err != nil {
		return nil, err
	}
	var head *Checkpoint
	if hv != nil {
		if head, err = readCheckpoint(h, keys, hv.Record, hv.Signature); err != nil {
			return refused(err)
		}
		if head.Seq != hv.Seq {
			return broken(0, blocking.ReceiptCheckpointMismatch, "checkpoint #%d is stored as #%d", head.Seq, hv.Seq), nil
		}
	}
	report.Checkpoint = head
	var receipts, runs int64
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM runs)`).Scan(&receipts, &runs); err != nil {
		return nil, err
	}
	report.Receipts, report.Runs = int(receipts), int(runs)
	if err := l.checkCounts(ctx, head, file); err != nil {
		return refused(err)
	}
	if head == nil {
		if mark.Seq > 0 || file != nil {
			return broken(0, blocking.ReceiptCheckpointMismatch, "the store holds no signed checkpoint, but the last verify reached #%d", mark.Seq), nil
		}
		return report, nil
	}
	v, err := receiptVerifier(h.Home)
	if err != nil {
		return nil, err
	}
	if v == nil || v.KeyID() != head.ReceiptKey {
		return broken(0, blocking.ReceiptKeyUnpinned, "the receipt public key %s is missing or not the key checkpoint #%d pins", ReceiptPubFile, head.Seq), nil
	}
	if mark.Seq > head.Seq {
		return broken(0, blocking.ReceiptCheckpointMismatch, "the chain ends at #%d, before receipt #%d the last verify reached", head.Seq, mark.Seq), nil
	}
	if r, err := l.checkLinksBefore(ctx, mark, broken); err != nil || r != nil {
		return r, err
	}
	rows, err := store.Select(ctx, db, scanReceipt, `SELECT `+ReceiptColumns+` FROM receipts WHERE seq >= ? AND seq <= ? ORDER BY seq`, max(mark.Seq, 1), head.Seq)
	if err != nil {
		return nil, err
	}
	prev := ""
	if mark.Seq > 0 {
		if len(rows) == 0 || rows[0].Seq != mark.Seq || ir.DigestBytes(rows[0].Record) != mark.Head {
			return broken(mark.Seq, blocking.ReceiptChainBroken, "it is not the receipt the last verify ended at"), nil
		}
		prev, rows = mark.Head, rows[1:]
	}
	fresh := make([]Receipt, len(rows))
	digests := make([]string, len(rows))
	signed := verifyAll(v, rows)
	for i, row := range rows {
		want := mark.Seq + int64(i) + 1
		if row.Seq != want {
			return broken(want, blocking.ReceiptChainBroken, "receipt #%d is missing", want), nil
		}
		rec := &fresh[i]
		if !signed[i] {
			return broken(row.Seq, blocking.ReceiptChainBroken, "the signature does not verify with the receipt key"), nil
		}
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
	report.Verified = len(rows)
	switch {
	case head.Seq != mark.Seq+int64(len(rows)) || head.Head != prev:
		return broken(0, blocking.ReceiptCheckpointMismatch, "the chain ends at #%d but the host's last checkpoint is #%d with another head", mark.Seq+int64(len(rows)), head.Seq), nil
	case file == nil:
		return broken(0, blocking.ReceiptCheckpointMismatch, "the checkpoint file %s is missing", CheckpointFile), nil
	}
	if err := l.checkHeads(ctx, head, file, last); err != nil {
		return refused(err)
	}
	if r := checkBindings(ctx, h, fresh, broken); r != nil {
		return r, nil
	}
	if report, err = l.checkRunsSince(ctx, report, key, mark.RunRowID, fresh, broken); err != nil || !report.OK {
		return report, err
	}
	return checkRevocations(ctx, h, report)
}

// checkLinksBefore holds every receipt before the mark to the one after
// it without verifying signatures again: each record's digest must be
// the one the next record names as its prev, up to the marked receipt,
// whose digest the last verify checked against a signed head. So a
// receipt edited in place anywhere in the history is found (a
// replacement would have to hash to a digest the next record holds), at
// the cost of reading and hashing the records, not of their signatures.
func (l *Ledger) checkLinksBefore(ctx context.Context, mark *verifiedMark, broken brokenFunc) (*ChainReport, error) {
	if mark.Seq == 0 {
		return nil, nil
	}
	type linked struct {
		seq    int64
		record []byte
		digest string
	}
	batch := make([]linked, 0, chainBatch)
	want, prev := int64(1), ""
	var report *ChainReport
	flush := func() error {
		// Unpacking and hashing, the cost of a long history, on every
		// core; the links are then followed in order.
		parallel(len(batch), func(i int) {
			batch[i].record = store.Unpack(batch[i].record)
			batch[i].digest = ir.DigestBytes(batch[i].record)
		})
		for _, b := range batch {
			if b.seq != want {
				report = broken(want, blocking.ReceiptChainBroken, "receipt #%d is missing", want)
				return errChainStop
			}
			if b.seq > 1 && !bytes.Contains(b.record, []byte(`"prev":"`+prev+`"`)) {
				report = broken(b.seq-1, blocking.ReceiptChainBroken, "it is not the receipt the next one links to")
				return errChainStop
			}
			prev, want = b.digest, want+1
		}
		batch = batch[:0]
		return nil
	}
	err := store.Each(ctx, l.db, func(r store.Row, v *linked) error { return r.Scan(&v.seq, &v.record) }, func(v *linked) error {
		if batch = append(batch, *v); len(batch) < chainBatch {
			return nil
		}
		return flush()
	}, `SELECT seq, record FROM receipts WHERE seq <= ? ORDER BY seq`, mark.Seq)
	if err == nil {
		err = flush()
	}
	if errors.Is(err, errChainStop) {
		return report, nil
	}
	if err != nil {
		return nil, err
	}
	if want-1 != mark.Seq || prev != mark.Head {
		return broken(mark.Seq, blocking.ReceiptChainBroken, "it is not the receipt the last verify ended at"), nil
	}
	return nil, nil
}

// checkRunsSince checks the runs stored since the mark and the runs of
// the receipts sealed since: their MACs, the receipt each names, and each
// new receipt's run present and not older than it.
func (l *Ledger) checkRunsSince(ctx context.Context, report *ChainReport, key []byte, rowID int64, fresh []Receipt, broken brokenFunc) (*ChainReport, error) {
	rows, err := store.Select(ctx, l.db, scanRun, `SELECT `+runColumns+` FROM runs WHERE rowid > ? ORDER BY rowid`, rowID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range rows {
		seen[rows[i].RunID] = true
	}
	for _, rec := range fresh {
		if seen[rec.RunID] {
			continue
		}
		row, err := l.Tables().RunByID(ctx, rec.RunID)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return broken(rec.Seq, blocking.ReceiptRunsDisagree, "its run is missing or older than the receipt"), nil
		}
		seen[rec.RunID] = true
		rows = append(rows, *row)
	}
	attempts := map[string]int{}
	for i := range rows {
		r, err := DecodeRunRow(key, &rows[i])
		if err != nil {
			return broken(0, blocking.RunRecordTampered, "run %s: %s", rows[i].RunID, detailOf(err)), nil
		}
		attempts[r.RunID] = r.Attempt
		if r.Receipt == "" {
			continue
		}
		stored, err := lastReceipt(ctx, l.db, `SELECT `+ReceiptColumns+` FROM receipts WHERE run_id = ? AND attempt = ?`, r.RunID, r.Attempt)
		if err != nil {
			return nil, err
		}
		var rec Receipt
		if stored == nil || ir.DigestBytes(stored.Record) != r.Receipt || json.Unmarshal(stored.Record, &rec) != nil || rec.Outcome != r.Outcome || rec.Reason != r.Reason {
			return broken(0, blocking.ReceiptRunsDisagree, "run %s names a receipt the chain does not hold for it", r.RunID), nil
		}
	}
	for _, rec := range fresh {
		if a, ok := attempts[rec.RunID]; !ok || a < rec.Attempt {
			return broken(rec.Seq, blocking.ReceiptRunsDisagree, "its run is missing or older than the receipt"), nil
		}
	}
	return report, nil
}
