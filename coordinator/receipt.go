package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/canonical"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/store"
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
	Outcome         harness.Outcome   `json:"outcome"`
	Reason          Reason            `json:"reason"`
	Evidence        []string          `json:"evidence"`
	EvidenceDigests map[string]string `json:"evidenceDigests"`
	PlanDigest      string            `json:"planDigest"`
	BindingDigest   string            `json:"bindingDigest"`
	At              time.Time         `json:"at"`
}

// sealRun appends the receipt of the run's current attempt, which must be
// terminal, and records its digest in the run, in one write; an attempt
// already sealed is left as it is. It returns the run as stored.
func sealRun(ctx context.Context, h *admit.Host, signer *oci.Signer, runID string, now time.Time) (*runState, error) {
	r, err := readRun(ctx, h, runID)
	if err != nil {
		return nil, err
	}
	if r.Status != stateTerminal || r.Receipt != "" {
		return r, nil
	}
	var out *runState
	_, err = h.DB().SealRun(ctx, runID, r.Attempt, func(seq int64, prev *store.Receipt) ([]byte, []byte, string, error) {
		rec := Receipt{Type: ReceiptType, Host: h.Policy.Host, Seq: seq, RunID: r.RunID, Deployment: r.Deployment, Job: r.Workflow,
			Attempt: r.Attempt, Fingerprint: r.Fingerprint, Outcome: r.Outcome, Reason: r.Reason, Evidence: r.Evidence,
			EvidenceDigests: r.Digests, PlanDigest: r.PlanDigest, BindingDigest: r.Binding, At: now.UTC().Truncate(time.Millisecond)}
		if prev != nil {
			rec.Prev = ir.DigestBytes(prev.Record)
		}
		b, err := canonical.Marshal(rec)
		if err != nil {
			return nil, nil, "", err
		}
		sig, err := signer.SignBytes(b)
		return b, sig, rec.Prev, err
	}, func(state, record []byte) ([]byte, error) {
		cur, err := decodeRun(state)
		if err != nil {
			return nil, err
		}
		cur.Receipt = ir.DigestBytes(record)
		out = cur
		return cur.encode()
	})
	if err != nil {
		return nil, err
	}
	if out == nil { // sealed meanwhile by another caller
		return readRun(ctx, h, runID)
	}
	return out, nil
}

// ChainReport is the result of checking the receipt chain.
type ChainReport struct {
	Receipts int  `json:"receipts"`
	OK       bool `json:"ok"`
	// FirstBroken is the sequence number of the first receipt that fails,
	// 0 when none does; Problem says how it fails.
	FirstBroken int64  `json:"firstBroken,omitempty"`
	Problem     string `json:"problem,omitempty"`
	// Head is the digest of the last receipt.
	Head string `json:"head,omitempty"`
}

// VerifyReceipts checks the whole chain: every signature with the receipt
// key, every sequence number, every link to the receipt before.
func VerifyReceipts(ctx context.Context, h *admit.Host) (*ChainReport, error) {
	rows, err := h.DB().Receipts(ctx)
	if err != nil {
		return nil, err
	}
	report := &ChainReport{Receipts: len(rows), OK: true}
	if len(rows) == 0 {
		return report, nil
	}
	v, err := receiptVerifier(h.Home)
	if err != nil {
		return nil, err
	}
	broken := func(seq int64, format string, args ...any) *ChainReport {
		report.OK, report.FirstBroken, report.Problem = false, seq, fmt.Sprintf(format, args...)
		return report
	}
	if v == nil {
		return broken(rows[0].Seq, "the receipt public key %s is missing", ReceiptPubFile), nil
	}
	prev := ""
	for i, row := range rows {
		if row.Seq != int64(i+1) {
			return broken(int64(i+1), "receipt #%d is missing", i+1), nil
		}
		if err := v.VerifyBytes(row.Signature, row.Record); err != nil {
			return broken(row.Seq, "the signature does not verify with the receipt key"), nil
		}
		var rec Receipt
		if err := json.Unmarshal(row.Record, &rec); err != nil || rec.Type != ReceiptType || rec.Seq != row.Seq || rec.RunID != row.RunID {
			return broken(row.Seq, "the record does not match its row"), nil
		}
		if rec.Prev != prev || row.PrevDigest != prev {
			return broken(row.Seq, "it does not link to receipt #%d", row.Seq-1), nil
		}
		prev = ir.DigestBytes(row.Record)
	}
	report.Head = prev
	return report, nil
}

func digestJSON(b json.RawMessage) string {
	c, err := canonical.Transform(b)
	if err != nil {
		return ir.DigestBytes(b)
	}
	return ir.DigestBytes(c)
}
