package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// chainBatch is how many rows the chain check holds at once: each batch's
// signatures and decodes are spread over the cores, then checked in
// order. Memory is bounded by it, not by the history.
const chainBatch = 1024

// maxBindingHistories bounds the deployments whose binding histories the
// chain check keeps while it reads; past it they are read again.
const maxBindingHistories = 64

// errChainStop ends a streamed read once the report says what broke.
var errChainStop = errors.New("chain check stopped")

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
//
// It streams: one pass over the receipts in order, holding the previous
// digest and the checkpoint file's position, then one ordered merge of
// the runs and the receipts by run id, both read from one snapshot of the
// store, so its memory does not grow with the history.
func (l *Ledger) CheckChain(ctx context.Context, in ChainInputs) (*ChainReport, error) {
	h := l.h
	keys, err := l.ReceiptKeyPins(ctx)
	if err != nil {
		return nil, err
	}
	c := &chainCheck{h: h, in: in, report: &ChainReport{OK: true}, bindings: newBindingCheck(h)}
	// The file is read first: it is written after the store, so the store
	// is never behind it.
	file, err := decodeCheckpointFile(h, keys, in.CheckpointFile)
	if err != nil {
		return c.broken(0, blocking.ReceiptCheckpointMismatch, "%s", detailOf(err)), nil
	}
	err = l.db.Snapshot(ctx, func(tx *sql.Tx) error {
		return c.run(ctx, tx, keys, file)
	})
	if errors.Is(err, errChainStop) {
		return c.report, nil
	}
	if err != nil {
		return nil, err
	}
	return c.report, nil
}

// chainCheck is one CheckChain: its inputs and the report it fills.
type chainCheck struct {
	h        *host.Host
	in       ChainInputs
	report   *ChainReport
	bindings *bindingCheck
}

// broken marks the report broken at receipt seq (0: not one receipt's).
func (c *chainCheck) broken(seq int64, code blocking.Code, format string, args ...any) *ChainReport {
	r := c.report
	r.OK, r.FirstBroken, r.Code, r.Problem = false, seq, code, fmt.Sprintf(format, args...)
	return r
}

// stop is broken, as the error that ends the streamed read.
func (c *chainCheck) stop(seq int64, code blocking.Code, format string, args ...any) error {
	c.broken(seq, code, format, args...)
	return errChainStop
}

// run is the whole check inside one read snapshot.
func (c *chainCheck) run(ctx context.Context, tx *sql.Tx, keys PinnedKeys, file *Checkpoint) error {
	head, err := latestCheckpointIn(ctx, tx, c.h, keys)
	if err != nil {
		var why *blocking.Error
		if !errors.As(err, &why) {
			return err
		}
		return c.stop(0, blocking.ReceiptCheckpointMismatch, "%s", why.Detail)
	}
	c.report.Checkpoint = head
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM runs)`).Scan(&c.report.Receipts, &c.report.Runs); err != nil {
		return err
	}
	pinned := head
	if pinned == nil {
		pinned = file
	}
	if pinned == nil {
		var any bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM receipts)`).Scan(&any); err != nil {
			return err
		}
		if any {
			return c.stop(0, blocking.ReceiptCheckpointMismatch, "the store holds receipts but no signed checkpoint")
		}
		return c.checkRuns(ctx, tx)
	}
	if c.in.ReceiptKey == nil || c.in.ReceiptKey.KeyID() != pinned.ReceiptKey {
		return c.stop(0, blocking.ReceiptKeyUnpinned, "the receipt public key %s is missing or not the key checkpoint #%d pins", ReceiptPubFile, pinned.Seq)
	}
	pass, err := c.checkLinks(ctx, tx, file)
	if err != nil {
		return err
	}
	n := pass.receipts
	switch {
	case head == nil:
		return c.stop(0, blocking.ReceiptCheckpointMismatch, "the store holds no signed checkpoint for the %d receipts", n)
	case head.Seq != n || head.Head != c.report.Head:
		return c.stop(0, blocking.ReceiptCheckpointMismatch, "the chain has %d receipts but the host's last checkpoint is #%d with another head", n, head.Seq)
	case file == nil:
		return c.stop(0, blocking.ReceiptCheckpointMismatch, "the checkpoint file %s is missing", CheckpointFile)
	case file.Seq > n:
		return c.stop(0, blocking.ReceiptCheckpointMismatch, "the chain has %d receipts, fewer than checkpoint #%d in %s", n, file.Seq, CheckpointFile)
	case file.Head != pass.fileHead:
		return c.stop(file.Seq, blocking.ReceiptCheckpointMismatch, "the receipt is not the head checkpoint #%d in %s names", file.Seq, CheckpointFile)
	}
	if pass.binding != nil {
		return c.stop(pass.binding.seq, blocking.ReceiptBindingUnverified, "%s", pass.binding.detail)
	}
	return c.checkRuns(ctx, tx)
}

// latestCheckpointIn is latestCheckpoint read through q.
func latestCheckpointIn(ctx context.Context, q store.Querier, h *host.Host, keys PinnedKeys) (*Checkpoint, error) {
	v, err := store.LatestVersionTx(ctx, q, store.KindCheckpoint, store.CheckpointKey)
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

// problem is the first failure of a check made beside the chain's links,
// reported only once the links hold (the order the checks are named in).
type problem struct {
	seq    int64
	order  int64
	code   blocking.Code
	detail string
}

// linkPass is what the pass over the receipts learned besides the report.
type linkPass struct {
	// fileHead is the digest of the receipt the checkpoint file names.
	fileHead string
	// binding is the first receipt whose binding does not verify.
	binding *problem
	// receipts is how many receipts the chain holds.
	receipts int64
}

// checkedReceipt is one receipt row with what its batch's workers found.
type checkedReceipt struct {
	row     ReceiptRow
	rec     Receipt
	digest  string
	signed  bool
	decoded bool
}

// checkLinks reads every receipt in order, a batch at a time: each
// signature with the receipt key, each record decoded strictly and held
// to its row, each link to the receipt before; it keeps only the last
// digest, the digest at the checkpoint file's position and the first
// receipt whose binding does not verify. It sets the report's Head.
func (c *chainCheck) checkLinks(ctx context.Context, tx *sql.Tx, file *Checkpoint) (*linkPass, error) {
	pass := &linkPass{}
	batch := make([]checkedReceipt, 0, chainBatch)
	prev := ""
	n := int64(0)
	flush := func() error {
		c.checkReceipts(batch)
		for i := range batch {
			b := &batch[i]
			row, rec := &b.row, &b.rec
			want := n + 1
			switch {
			case row.Seq != want:
				return c.stop(want, blocking.ReceiptChainBroken, "receipt #%d is missing", want)
			case !b.signed:
				return c.stop(row.Seq, blocking.ReceiptChainBroken, "the signature does not verify with the receipt key")
			case !b.decoded || rec.Type != ReceiptType || rec.Seq != row.Seq || rec.RunID != row.RunID || rec.Attempt != row.Attempt || rec.Host != c.h.Policy.Host:
				return c.stop(row.Seq, blocking.ReceiptChainBroken, "the record does not match its row")
			case rec.Prev != prev || row.PrevDigest != prev:
				return c.stop(row.Seq, blocking.ReceiptChainBroken, "it does not link to receipt #%d", row.Seq-1)
			}
			prev, n = b.digest, want
			if file != nil && row.Seq == file.Seq {
				pass.fileHead = b.digest
			}
			if pass.binding == nil {
				p, err := c.bindings.check(ctx, rec)
				if err != nil {
					return err
				}
				pass.binding = p
			}
		}
		batch = batch[:0]
		return nil
	}
	// The records are read as stored and unpacked by the batch's workers.
	scan := func(r store.Row, v *ReceiptRow) error {
		return r.Scan(&v.Seq, &v.RunID, &v.Attempt, &v.PrevDigest, &v.Record, &v.Signature)
	}
	err := store.Each(ctx, tx, scan, func(r *ReceiptRow) error {
		batch = append(batch, checkedReceipt{row: *r})
		if len(batch) < chainBatch {
			return nil
		}
		return flush()
	}, `SELECT `+ReceiptColumns+` FROM receipts ORDER BY seq`)
	if err == nil {
		err = flush()
	}
	pass.receipts, c.report.Head = n, prev
	return pass, err
}

// checkReceipts verifies, decodes and digests a batch of receipts on
// every core: the signatures are what a long chain's check costs.
func (c *chainCheck) checkReceipts(batch []checkedReceipt) {
	parallel(len(batch), func(i int) {
		b := &batch[i]
		b.row.Record = store.Unpack(b.row.Record)
		b.signed = c.in.ReceiptKey.VerifyBytes(b.row.Signature, b.row.Record) == nil
		b.decoded = canonical.DecodeStrict(b.row.Record, &b.rec) == nil
		b.digest = ir.DigestBytes(b.row.Record)
	})
}

// parallel calls fn(i) for every i below n, on every core when n is large
// enough to be worth it.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/64))
	if workers == 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// verifyAll verifies every receipt's signature with key, on every core.
// ok[i] is row i's.
func verifyAll(key *signing.Verifier, rows []ReceiptRow) []bool {
	ok := make([]bool, len(rows))
	parallel(len(rows), func(i int) {
		ok[i] = key.VerifyBytes(rows[i].Signature, rows[i].Record) == nil
	})
	return ok
}

// bindingCheck holds receipts to a binding of their deployment that
// verifies, reading each deployment's bindings once (at most
// maxBindingHistories deployments are kept).
type bindingCheck struct {
	h       *host.Host
	history map[string]map[string]*bind.Binding
}

func newBindingCheck(h *host.Host) *bindingCheck {
	return &bindingCheck{h: h, history: map[string]map[string]*bind.Binding{}}
}

// check is nil when rec's binding digest names a host-signed binding of
// its deployment whose plan is rec's plan, else the problem.
func (b *bindingCheck) check(ctx context.Context, rec *Receipt) (*problem, error) {
	known, ok := b.history[rec.Deployment]
	if !ok {
		var err error
		if known, err = bind.History(ctx, b.h, rec.Deployment); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return &problem{seq: rec.Seq, detail: "the bindings of its deployment cannot be read"}, nil
		}
		if len(b.history) >= maxBindingHistories {
			clear(b.history)
		}
		b.history[rec.Deployment] = known
	}
	if bd := known[rec.BindingDigest]; bd == nil || bd.PlanDigest != rec.PlanDigest {
		return &problem{seq: rec.Seq, detail: fmt.Sprintf("it names no host-signed binding of deployment %s with its plan", rec.Deployment)}, nil
	}
	return nil, nil
}

// checkBindings holds every receipt to a binding of its deployment that
// verifies: its binding digest names one, its plan digest is that
// binding's plan.
func checkBindings(ctx context.Context, h *host.Host, receipts []Receipt, broken brokenFunc) *ChainReport {
	b := newBindingCheck(h)
	for i := range receipts {
		if p, err := b.check(ctx, &receipts[i]); err != nil || p != nil {
			if p == nil {
				p = &problem{seq: receipts[i].Seq, detail: "the bindings of its deployment cannot be read"}
			}
			return broken(p.seq, blocking.ReceiptBindingUnverified, "%s", p.detail)
		}
	}
	return nil
}

// storedRun is a run row with its rowid (the order runs were stored in)
// and, once its batch is decoded, its state.
type storedRun struct {
	rowID int64
	row   RunRow
	state *RunRecord
	err   error
	// named is the stored record of the receipt of the run's attempt,
	// when the run names one and the chain holds one for its attempt;
	// matches says whether it is the receipt the run names.
	named   []byte
	matches bool
}

// runOf is a receipt row as the merge with the runs reads it.
type runOf struct {
	seq     int64
	runID   string
	attempt int
	record  []byte
}

// checkRuns holds runs and receipts to each other: every run's MAC (when
// a key is given), every terminal run's receipt in the chain for its run
// and attempt, every receipt's run present and not older than it, and no
// fewer runs than the host signed. Runs (a batch at a time, decoded on
// every core) and receipts are merged by run id, so it holds one batch.
// Of several failures it names the run stored first, and a receipt
// without its run only when every run holds.
func (c *chainCheck) checkRuns(ctx context.Context, tx *sql.Tx) error {
	runs := int64(c.report.Runs)
	if cp := c.report.Checkpoint; cp != nil && runs < cp.Runs {
		return c.stop(0, blocking.ReceiptRunsDisagree, "the store holds %d runs, fewer than the %d checkpoint #%d signed", runs, cp.Runs, cp.Seq)
	}
	receipts, err := tx.QueryContext(ctx, `SELECT seq, run_id, attempt, record FROM receipts ORDER BY run_id, attempt`)
	if err != nil {
		return err
	}
	defer receipts.Close()
	m := &runMerge{receipts: receipts}
	batch := make([]storedRun, 0, chainBatch)
	flush := func() error {
		parallel(len(batch), func(i int) {
			b := &batch[i]
			b.row.State = store.Unpack(b.row.State)
			b.state, b.err = decodeRunUnkeyed(c.in.RunKey, &b.row)
		})
		for i := range batch {
			if err := m.merge(&batch[i]); err != nil {
				return err
			}
		}
		parallel(len(batch), func(i int) {
			if b := &batch[i]; b.named != nil {
				b.matches = receiptMatches(store.Unpack(b.named), b.state)
			}
		})
		for i := range batch {
			m.judge(&batch[i])
		}
		batch = batch[:0]
		return nil
	}
	err = store.Each(ctx, tx, func(r store.Row, v *storedRun) error {
		return r.Scan(&v.rowID, &v.row.RunID, &v.row.Deployment, &v.row.RequestID, &v.row.State)
	}, func(v *storedRun) error {
		batch = append(batch, *v)
		if len(batch) < chainBatch {
			return nil
		}
		return flush()
	}, `SELECT rowid, `+runColumns+` FROM runs ORDER BY run_id`)
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = m.rest()
	}
	if err != nil {
		return err
	}
	if p := m.run; p != nil {
		return c.stop(0, p.code, "%s", p.detail)
	}
	if p := m.orphan; p != nil {
		return c.stop(p.seq, blocking.ReceiptRunsDisagree, "its run is missing or older than the receipt")
	}
	return nil
}

// runMerge walks the receipts ordered by run id beside the runs ordered
// the same way, keeping the first problem of each kind.
type runMerge struct {
	receipts *sql.Rows
	cur      *runOf
	done     bool
	// run is the problem of the run stored first (lowest rowid) among
	// those that fail; orphan the lowest receipt whose run is missing or
	// older than it.
	run    *problem
	orphan *problem
}

// peek is the next receipt in run-id order, nil at the end.
func (m *runMerge) peek() (*runOf, error) {
	if m.cur != nil || m.done {
		return m.cur, nil
	}
	if !m.receipts.Next() {
		m.done = true
		return nil, m.receipts.Err()
	}
	var r runOf
	if err := m.receipts.Scan(&r.seq, &r.runID, &r.attempt, &r.record); err != nil {
		return nil, err
	}
	m.cur = &r
	return m.cur, nil
}

// orphaned notes receipt seq as one whose run is missing or older.
func (m *runMerge) orphaned(seq int64) {
	if m.orphan == nil || seq < m.orphan.seq {
		m.orphan = &problem{seq: seq}
	}
}

// failed notes run r's problem when r was stored before any other that
// failed.
func (m *runMerge) failed(r *storedRun, code blocking.Code, detail string) {
	if m.run == nil || r.rowID < m.run.order {
		m.run = &problem{order: r.rowID, code: code, detail: detail}
	}
}

// merge takes run r (the runs come in run-id order): the receipts of run
// ids before it have no run; its own receipts must not be of a later
// attempt; the one of its attempt is kept in r.named, for judge.
func (m *runMerge) merge(r *storedRun) error {
	for {
		rec, err := m.peek()
		if err != nil {
			return err
		}
		if rec == nil || rec.runID > r.row.RunID {
			break
		}
		m.cur = nil
		switch {
		case rec.runID < r.row.RunID:
			m.orphaned(rec.seq)
		case r.err != nil:
		case rec.attempt > r.state.Attempt:
			m.orphaned(rec.seq)
		case rec.attempt == r.state.Attempt && r.state.Receipt != "":
			r.named = rec.record
		}
	}
	return nil
}

// judge notes run r's problem, once its named receipt is compared: a run
// that does not verify, or one that names a receipt the chain does not
// hold for its run and attempt.
func (m *runMerge) judge(r *storedRun) {
	switch {
	case r.err != nil:
		m.failed(r, blocking.RunRecordTampered, fmt.Sprintf("run %s: %s", r.row.RunID, detailOf(r.err)))
	case r.state.Receipt != "" && !r.matches:
		m.failed(r, blocking.ReceiptRunsDisagree, fmt.Sprintf("run %s names a receipt the chain does not hold for it", r.row.RunID))
	}
}

// rest notes every receipt after the last run as one without its run.
func (m *runMerge) rest() error {
	for {
		rec, err := m.peek()
		if err != nil || rec == nil {
			return err
		}
		m.cur = nil
		m.orphaned(rec.seq)
	}
}

// receiptMatches reports whether record is the receipt run r names: its
// digest, and the outcome and reason it signed.
func receiptMatches(record []byte, r *RunRecord) bool {
	if ir.DigestBytes(record) != r.Receipt {
		return false
	}
	var signed struct {
		Outcome contract.Outcome `json:"outcome"`
		Reason  contract.Reason  `json:"reason"`
	}
	return json.Unmarshal(record, &signed) == nil && signed.Outcome == r.Outcome && signed.Reason == r.Reason
}
