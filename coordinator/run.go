package coordinator

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
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
	RunID       string           `json:"run_id"`
	Deployment  string           `json:"deployment"`
	RequestID   string           `json:"request_id"`
	Workflow    string           `json:"workflow"`
	Fingerprint string           `json:"fingerprint"`
	Attempt     int              `json:"attempt"`
	Status      string           `json:"status"`
	Outcome     contract.Outcome `json:"outcome"`
	Reason      contract.Reason  `json:"reason"`
	// Completed lists effect steps whose call answered success: never
	// repeated. InFlight is an effect step sent without a recorded answer.
	Completed []string `json:"completed"`
	InFlight  string   `json:"in_flight,omitempty"`
	// Approved lists steps a person approved; PausedAt is the step the
	// run waits at while paused.
	Approved []string `json:"approved"`
	// SkipAllowed lists steps a person chose to skip; Skipped the steps
	// the run passed over for it (each only while its declared guard held
	// in the same attempt). Both absent in runs without a skip.
	SkipAllowed []string          `json:"skip_allowed,omitempty"`
	Skipped     []string          `json:"skipped,omitempty"`
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
	// MAC is the host MAC (HMAC-SHA256 with the coordinator secret) over
	// every other field: a row edited outside the coordinator does not
	// read (see decodeRun).
	MAC string `json:"mac,omitempty"`
}

// runMACDomain separates run-row MACs from every other use of the secret.
const runMACDomain = "oa.run-row/v1\n"

// errRunTampered is the refusal of a run row that is not the
// coordinator's own.
func errRunTampered(why string) error { return blocking.New(blocking.RunRecordTampered, "%s", why) }

// decodeRun decodes a run's stored state and checks its MAC with key.
// The MAC is over the state re-encoded without it, so it covers exactly
// the fields the coordinator acts on.
func decodeRun(key, b []byte) (*runState, error) {
	var r runState
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, errRunTampered("the run record does not decode")
	}
	mac := r.MAC
	want, err := r.mac(key)
	if err != nil {
		return nil, err
	}
	if mac == "" || !hmac.Equal([]byte(mac), []byte(want)) {
		return nil, errRunTampered("the run record does not carry this host's MAC")
	}
	r.MAC = mac
	return &r, nil
}

// mac computes r's MAC with key (r.MAC is cleared).
func (r *runState) mac(key []byte) (string, error) {
	r.MAC = ""
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(runMACDomain))
	m.Write(b)
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// encode encodes r for the store with its MAC made with key.
func (r *runState) encode(key []byte) ([]byte, error) {
	mac, err := r.mac(key)
	if err != nil {
		return nil, err
	}
	r.MAC = mac
	return json.Marshal(r)
}

// effectsStarted reports whether any effect may have reached the app.
func (r *runState) effectsStarted() bool { return r.InFlight != "" || len(r.Completed) > 0 }

func (r *runState) completed(step string) bool { return slices.Contains(r.Completed, step) }

// afterChange is reason, unless an earlier effect of the run was made and
// reason says nothing was: then the run is part-way, never did_not_run.
func (r *runState) afterChange(reason contract.Reason) contract.Reason {
	info, _ := reason.Info()
	if len(r.Completed) == 0 || info.RecordChanged != contract.ChangedNo {
		return reason
	}
	if reason == contract.ReasonApprovalRequired {
		return contract.ReasonApprovalAfterChange
	}
	return contract.ReasonPartiallyDone
}
func (r *runState) approved(step string) bool { return slices.Contains(r.Approved, step) }

// skipAllowed reports whether a person chose to skip step.
func (r *runState) skipAllowed(step string) bool { return slices.Contains(r.SkipAllowed, step) }

// decidedAt reports whether a person let the paused run go on: approved
// or skipped the step it waits at.
func (r *runState) decidedAt() bool { return r.approved(r.PausedAt) || r.skipAllowed(r.PausedAt) }

// result is what the calling agent sees of the run.
func (r *runState) result() *Result {
	res := newResult(r.Reason)
	res.RunID, res.RequestID, res.Workflow, res.Attempt = r.RunID, r.RequestID, r.Workflow, r.Attempt
	res.Evidence = append([]string{}, r.Evidence...)
	res.AttentionID = r.AttentionID
	if r.Status == stateTerminal && r.Receipt != "" {
		res.Proof, res.ReceiptDigest = contract.ProofSealed, r.Receipt
	}
	return &res
}

// readRun reads a run's state from the host's store, its MAC checked.
func readRun(ctx context.Context, h *host.Host, runID string) (*runState, error) {
	row, err := storeOf(h).RunByID(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, blocking.New(blocking.RunUnknown, "no such run")
	}
	key, err := runKey(h.Home)
	if err != nil {
		return nil, err
	}
	return decodeRow(key, row)
}

// decodeRow decodes a stored run, its MAC checked and its row's keys the
// ones its state names (a state copied into another row does not read).
func decodeRow(key []byte, row *store.Run) (*runState, error) {
	r, err := decodeRun(key, row.State)
	if err != nil {
		return nil, err
	}
	if r.RunID != row.RunID || r.Deployment != row.Deployment || r.RequestID != row.RequestID {
		return nil, errRunTampered("the run record names another run")
	}
	return r, nil
}

// runKeys caches the coordinator secret per host folder for the readers
// that have a host but no coordinator (sealing from the CLI, readRun).
var runKeys sync.Map

// runKey is the host's coordinator secret, the key of run-row MACs.
func runKey(home string) ([]byte, error) {
	if k, ok := runKeys.Load(home); ok {
		return k.([]byte), nil
	}
	k, err := hostSecret(home)
	if err != nil {
		return nil, err
	}
	runKeys.Store(home, k)
	return k, nil
}

// verifiedRun reads the run a request names before a replay, retry or
// resume acts on it: its MAC, its row, and that it is not older than the
// receipts the chain holds for it (a row rolled back to an earlier,
// validly MACed state would otherwise start a new attempt). A tampered
// row is answered with run_record_tampered, never acted on.
func (c *Coordinator) verifiedRun(ctx context.Context, row *store.Run) (*runState, *Result, error) {
	r, err := decodeRow(c.secret, row)
	if err == nil {
		err = checkAgainstReceipts(ctx, c.host, r)
	}
	if blocking.Has(err, blocking.RunRecordTampered) {
		fmt.Fprintf(c.opts.Operator, "oa coordinator: deployment %s: run %s: %v; refused\n", c.opts.Deployment, row.RunID, err)
		res := newResult(contract.ReasonRunRecordTampered)
		res.RunID, res.RequestID, res.Proof = row.RunID, row.RequestID, contract.ProofNone
		return nil, &res, nil
	}
	return r, nil, err
}

// checkAgainstReceipts refuses a run whose state is older than the
// receipts sealed for it: a receipt of a later attempt, or of its own
// attempt while the state names none or another.
func checkAgainstReceipts(ctx context.Context, h *host.Host, r *runState) error {
	last, err := storeOf(h).LastReceiptOf(ctx, r.RunID)
	if err != nil || last == nil {
		return err
	}
	switch {
	case last.Attempt > r.Attempt:
		return errRunTampered("the run record is older than its receipts")
	case last.Attempt == r.Attempt && (r.Status != stateTerminal || r.Receipt != ir.DigestBytes(last.Record)):
		return errRunTampered("the run record does not name its attempt's receipt")
	}
	return nil
}
