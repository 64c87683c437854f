package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
)

// runDoc is the part of a coordinator run record a transcript reads: names,
// closed codes, digests and times. The record holds no input value (only
// a keyed fingerprint) and nothing read downstream, and the fields that
// could (none today) are simply never decoded.
type runDoc struct {
	RunID     string           `json:"run_id"`
	RequestID string           `json:"request_id"`
	Workflow  string           `json:"workflow"`
	Attempt   int              `json:"attempt"`
	Outcome   contract.Outcome `json:"outcome"`
	Reason    string           `json:"reason"`
	Receipt   string           `json:"receipt_digest"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
}

// The shapes a run record's fields must have to be shown. Each length is
// checked apart from its pattern (shaped): a counted repetition compiles
// into one copy of the class per place, paid by every oa process at start.
var (
	runIDPattern  = regexp.MustCompile(`^run_[0-9a-f]+$`)    // at most 68
	reasonPattern = regexp.MustCompile(`^[a-z][a-z_]*$`)     // at most 64
	identPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)  // at most 63
	digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]+$`) // exactly 71
)

// shaped reports whether s is at most max bytes and matches pattern.
func shaped(s string, max int, pattern *regexp.Regexp) bool {
	return len(s) <= max && pattern.MatchString(s)
}

// reasonUnknownWorkflow is the coordinator's reason for a run that named no
// job of the release: its workflow field is the caller's own text.
const reasonUnknownWorkflow = "unknown_workflow"

// Transcript lists the deployment's runs from the host's store, oldest
// first (the latest limit of them when limit > 0). Every field is checked
// against the shape the coordinator writes; a record that does not fit
// is refused (harness_transcript_unreadable), never shown, and a workflow
// name the caller made up is withheld.
func (m *MCPClient) Transcript(ctx context.Context, deployment string, limit int) ([]TurnRecord, error) {
	return Transcript(ctx, m.opts.Home, deployment, limit)
}

// Transcript is the transcript of any harness: the deployment's runs in
// the host's store at home (see MCPClient.Transcript).
func Transcript(ctx context.Context, home, deployment string, limit int) ([]TurnRecord, error) {
	if err := checkName(deployment); err != nil {
		return nil, err
	}
	// Opening the host checks it is one and brings its store up to date.
	h, err := host.Open(ctx, home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	runs, err := ledger.Open(h).Tables().RunsOf(ctx, deployment)
	if err != nil {
		return nil, err
	}
	out := make([]TurnRecord, 0, len(runs))
	for i, run := range runs {
		t, err := turn(run.State)
		if err != nil {
			return nil, blocking.New(blocking.HarnessTranscriptUnreadable, "run record %d of deployment %s: %v", i+1, deployment, err)
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// turn decodes one run record into a transcript line.
func turn(state []byte) (TurnRecord, error) {
	var d runDoc
	if err := json.Unmarshal(state, &d); err != nil {
		return TurnRecord{}, fmt.Errorf("does not decode")
	}
	info, ok := d.Outcome.Info()
	switch {
	case !shaped(d.RunID, len("run_")+64, runIDPattern):
		return TurnRecord{}, fmt.Errorf("run_id is malformed")
	case !contract.ValidID(d.RequestID):
		return TurnRecord{}, fmt.Errorf("request_id is malformed")
	case !ok:
		return TurnRecord{}, fmt.Errorf("outcome is not one of the contract's")
	case !shaped(d.Reason, 64, reasonPattern):
		return TurnRecord{}, fmt.Errorf("reason is not a closed code")
	case d.Attempt < 1:
		return TurnRecord{}, fmt.Errorf("attempt is not positive")
	case d.Receipt != "" && (len(d.Receipt) != len("sha256:")+64 || !digestPattern.MatchString(d.Receipt)):
		return TurnRecord{}, fmt.Errorf("receipt_digest is not a digest")
	case d.CreatedAt.IsZero():
		return TurnRecord{}, fmt.Errorf("created_at is missing")
	}
	t := TurnRecord{Time: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), RunID: d.RunID, RequestID: d.RequestID, Workflow: d.Workflow,
		Attempt: d.Attempt, Outcome: info.Outcome, Reason: d.Reason, ReceiptDigest: d.Receipt}
	if d.Reason == reasonUnknownWorkflow || !shaped(d.Workflow, 63, identPattern) {
		t.Workflow, t.WorkflowWithheld = "", true
	}
	return t, nil
}
