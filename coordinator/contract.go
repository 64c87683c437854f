package coordinator

import "github.com/oa-dev/oa/contract"

// Result is what a calling agent sees of a run: one outcome (or running),
// one closed reason and the reason's fixed copy.
type Result struct {
	RunID         string           `json:"run_id"`
	RequestID     string           `json:"request_id"`
	Workflow      string           `json:"workflow"`
	Outcome       contract.Outcome `json:"outcome"`
	Reason        contract.Reason  `json:"reason"`
	SafeToRetry   bool             `json:"safe_to_retry"`
	RecordChanged string           `json:"record_changed"`
	Proof         string           `json:"proof"`
	WhatHappened  string           `json:"what_happened"`
	NextAction    string           `json:"next_action"`
	Replayed      bool             `json:"replayed"`
	Attempt       int              `json:"attempt"`
	// Evidence names the required evidence that held.
	Evidence      []string `json:"evidence"`
	AttentionID   string   `json:"attention_id,omitempty"`
	ReceiptDigest string   `json:"receipt_digest,omitempty"`
}

// newResult fills a result's contract fields from reason.
func newResult(reason contract.Reason) Result {
	info, ok := reason.Info()
	if !ok {
		panic("coordinator: reason outside the closed set: " + string(reason))
	}
	return Result{Outcome: info.Outcome, Reason: reason, SafeToRetry: info.SafeToRetry, RecordChanged: info.RecordChanged,
		WhatHappened: info.WhatHappened, NextAction: info.NextAction, Proof: contract.ProofLocal, Evidence: []string{}}
}
