package ledger

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

// The statuses of a run record.
const (
	// RunRunning is a run the coordinator executes (or a dead one left).
	RunRunning = "running"
	// RunPaused is a run waiting on an attention item.
	RunPaused = "paused"
	// RunTerminal is a run whose attempt ended; only it is sealed.
	RunTerminal = "terminal"
)

// RunRecord is a run's durable record as the runs table holds it. It
// never holds an input value or anything read: only names, digests and
// the keyed fingerprint. The coordinator advances it; the ledger seals
// its terminal attempts into receipts and holds the runs and the receipts
// to each other. The field names and their order are its stored form and
// what its MAC covers.
type RunRecord struct {
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
	Owner       RunOwner          `json:"owner"`
	Receipt     string            `json:"receipt_digest,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`

	// DecidedCalls maps each step in Approved or SkipAllowed to the keyed
	// digest of the downstream call the person decided on (the attention
	// item's call digest): the decision holds only while the step would
	// send that very call. Absent in runs without such a decision.
	DecidedCalls map[string]string `json:"decided_calls,omitempty"`

	// RecordRefs are keyed fingerprints (RecordRef) of the run's string
	// inputs, each on its own: what `oa runs --record REF` matches a
	// record reference against, never the reference itself. Absent in
	// runs from before they were kept.
	RecordRefs []string `json:"record_refs,omitempty"`

	// MAC is the host MAC (HMAC-SHA256 with the coordinator secret) over
	// every other field: a row edited outside the coordinator does not
	// read (see DecodeRun).
	MAC string `json:"mac,omitempty"`
}

// RunOwner identifies the process executing a run: its pid and the
// kernel's start time of that pid, so a reused pid is not mistaken for
// the owner.
type RunOwner struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

// runMACDomain separates run-row MACs from every other use of the secret.
const runMACDomain = "oa.run-row/v1\n"

// RunTampered is the refusal (run_record_tampered) of a run row that is
// not the coordinator's own; why says how it fails.
func RunTampered(why string) error { return blocking.New(blocking.RunRecordTampered, "%s", why) }

// DecodeRun decodes a run's stored state and checks its MAC with key.
// The MAC is over the state re-encoded without it, so it covers exactly
// the fields the coordinator acts on.
func DecodeRun(key, b []byte) (*RunRecord, error) {
	var r RunRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, RunTampered("the run record does not decode")
	}
	mac := r.MAC
	want, err := r.mac(key)
	if err != nil {
		return nil, err
	}
	if mac == "" || !hmac.Equal([]byte(mac), []byte(want)) {
		return nil, RunTampered("the run record does not carry this host's MAC")
	}
	r.MAC = mac
	return &r, nil
}

// mac computes r's MAC with key (r.MAC is cleared).
func (r *RunRecord) mac(key []byte) (string, error) {
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

// Encode encodes r for the store with its MAC made with key.
func (r *RunRecord) Encode(key []byte) ([]byte, error) {
	mac, err := r.mac(key)
	if err != nil {
		return nil, err
	}
	r.MAC = mac
	return json.Marshal(r)
}

// DecodeRunRow decodes a stored run, its MAC checked and its row's keys
// the ones its state names (a state copied into another row does not
// read).
func DecodeRunRow(key []byte, row *RunRow) (*RunRecord, error) {
	r, err := DecodeRun(key, row.State)
	if err != nil {
		return nil, err
	}
	if r.RunID != row.RunID || r.Deployment != row.Deployment || r.RequestID != row.RequestID {
		return nil, RunTampered("the run record names another run")
	}
	return r, nil
}

// ReadRun reads a run's record from the host's store, its MAC checked;
// run_unknown when there is none.
func (l *Ledger) ReadRun(ctx context.Context, runID string) (*RunRecord, error) {
	row, err := l.Tables().RunByID(ctx, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, blocking.New(blocking.RunUnknown, "no such run")
	}
	key, err := l.Secret()
	if err != nil {
		return nil, err
	}
	return DecodeRunRow(key, row)
}

// recordRefDomain separates record reference fingerprints from every
// other use of the host secret.
const recordRefDomain = "oa.record-ref/v1\n"

// RecordRef is the keyed fingerprint of one record reference (an input's
// value) under the host secret: HMAC-SHA256, telling nothing of the
// reference without the secret.
func RecordRef(secret []byte, ref string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(recordRefDomain))
	m.Write([]byte(ref))
	return "hmac-sha256:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// MaxRecordRefs bounds the record references a run keeps.
const MaxRecordRefs = 16

// RecordRefsOf are the keyed fingerprints of the string values of
// inputs (a JSON object), each once, at most MaxRecordRefs, sorted.
func RecordRefsOf(secret []byte, inputs []byte) []string {
	var obj map[string]any
	if json.Unmarshal(inputs, &obj) != nil {
		return nil
	}
	var refs []string
	for _, v := range obj {
		if s, ok := v.(string); ok && s != "" && len(s) <= 256 {
			if r := RecordRef(secret, s); !slices.Contains(refs, r) {
				refs = append(refs, r)
			}
		}
	}
	slices.Sort(refs)
	if len(refs) > MaxRecordRefs {
		refs = refs[:MaxRecordRefs]
	}
	return refs
}
