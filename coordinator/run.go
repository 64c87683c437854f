package coordinator

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
)

// Run states.
const (
	stateRunning  = "running"
	statePaused   = "paused"
	stateTerminal = "terminal"
)

// runState is a run's durable state. It never holds an input value or
// anything read: only names, digests and the keyed fingerprint.
type runState struct {
	RunID       string          `json:"run_id"`
	Deployment  string          `json:"deployment"`
	RequestID   string          `json:"request_id"`
	Workflow    string          `json:"workflow"`
	Fingerprint string          `json:"fingerprint"`
	Attempt     int             `json:"attempt"`
	Status      string          `json:"status"`
	Outcome     harness.Outcome `json:"outcome"`
	Reason      Reason          `json:"reason"`
	// Completed lists effect steps whose call answered success: never
	// repeated. InFlight is an effect step sent without a recorded answer.
	Completed []string `json:"completed"`
	InFlight  string   `json:"in_flight,omitempty"`
	// Approved lists steps a person approved; PausedAt is the step the
	// run waits at while paused.
	Approved    []string          `json:"approved"`
	PausedAt    string            `json:"paused_at,omitempty"`
	AttentionID string            `json:"attention_id,omitempty"`
	Evidence    []string          `json:"evidence"`
	Digests     map[string]string `json:"digests"`
	PlanDigest  string            `json:"plan_digest"`
	Binding     string            `json:"binding_digest"`
	Owner       owner             `json:"owner"`
	Receipt     string            `json:"receipt_digest,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

func decodeRun(b []byte) (*runState, error) {
	var r runState
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *runState) encode() ([]byte, error) { return json.Marshal(r) }

// effectsStarted reports whether any effect may have reached the app.
func (r *runState) effectsStarted() bool { return r.InFlight != "" || len(r.Completed) > 0 }

func (r *runState) completed(step string) bool { return slices.Contains(r.Completed, step) }

// afterChange is reason, unless an earlier effect of the run was made and
// reason says nothing was: then the run is part-way, never did_not_run.
func (r *runState) afterChange(reason Reason) Reason {
	info, _ := reason.Info()
	if len(r.Completed) == 0 || info.RecordChanged != ChangedNo {
		return reason
	}
	if reason == ReasonApprovalRequired {
		return ReasonApprovalAfterChange
	}
	return ReasonPartiallyDone
}
func (r *runState) approved(step string) bool { return slices.Contains(r.Approved, step) }

// result is what the calling agent sees of the run.
func (r *runState) result() *Result {
	res := newResult(r.Reason)
	res.RunID, res.RequestID, res.Workflow, res.Attempt = r.RunID, r.RequestID, r.Workflow, r.Attempt
	res.Evidence = append([]string{}, r.Evidence...)
	res.AttentionID = r.AttentionID
	if r.Status == stateTerminal && r.Receipt != "" {
		res.Proof, res.ReceiptDigest = ProofSealed, r.Receipt
	}
	return &res
}

// attentionState is an attention item's durable state.
type attentionState struct {
	AttentionItem
	Deployment string `json:"deployment"`
}

// readRun reads a run's state from the host's store.
func readRun(ctx context.Context, h *admit.Host, runID string) (*runState, error) {
	row, err := h.DB().RunByID(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, blocking.New(blocking.RunUnknown, "no such run")
	}
	return decodeRun(row.State)
}
