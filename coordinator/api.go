package coordinator

import (
	"encoding/json"
	"io"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
)

// Options are how a coordinator is opened.
type Options struct {
	// Home is $OA_HOME.
	Home string
	// Deployment is the bound deployment served.
	Deployment string
	// Registry is how the bound release's registry is reached (TLS,
	// credentials); the host policy's limits apply over it
	// (host.Policy.ReleaseOptions), as when the release was admitted.
	Registry oci.OpenOptions
	// Mode is ModeDeployment, or ModeSandbox for the built-in demo.
	Mode string
	// Operator receives operator-only diagnostics (which link of the plan
	// changed, a downstream server's stderr). Never the calling agent.
	Operator io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// EffectTimeout bounds one downstream call; 0 means 30s.
	EffectTimeout time.Duration
	// Probe re-reads every downstream inventory at session start and before
	// each effect (on unless a test turns it off to count calls).
	NoProbe bool
	// MaxRuns bounds the runs this process executes at once; 0 means
	// DefaultMaxRuns. A run over the bound is stored and waits its turn
	// (a caller whose wait ends meanwhile is answered running), so a burst
	// of calls never floods the downstream servers or the host.
	MaxRuns int
}

// DefaultMaxRuns is how many runs one coordinator executes at once by
// default.
const DefaultMaxRuns = 32

// Modes of a coordinator.
const (
	ModeDeployment = "deployment"
	ModeSandbox    = "sandbox"
)

// WorkflowCard is one job as list_workflows shows it.
type WorkflowCard struct {
	Name        string          `json:"name"`
	Purpose     string          `json:"purpose"`
	DoneMeans   string          `json:"done_means"`
	InputSchema ir.InputSchema  `json:"input_schema"`
	Effects     []string        `json:"effects"`
	Approval    map[string]bool `json:"approval_required"`
}

// RunRequest is one run_workflow call.
type RunRequest struct {
	Workflow  string          `json:"workflow"`
	Inputs    json.RawMessage `json:"inputs"`
	RequestID string          `json:"request_id"`
	// Wait is how long to wait for a terminal outcome before answering
	// running.
	Wait time.Duration `json:"-"`
}

// AttentionItem is a paused run waiting for a person.
type AttentionItem struct {
	ID         string  `json:"attention_id"`
	RunID      string  `json:"run_id"`
	Workflow   string  `json:"workflow"`
	Step       string  `json:"step"`
	Capability string  `json:"capability"`
	Risk       ir.Risk `json:"risk"`
	// State is open, approved, rejected, escalated or skipped.
	State string `json:"state"`
	// Question is fixed copy naming the step and capability, never values.
	Question  string           `json:"question"`
	DecidedBy string           `json:"decided_by,omitempty"`
	Channel   string           `json:"channel,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
	DecidedAt *time.Time       `json:"decided_at,omitempty"`
	Outcome   contract.Outcome `json:"outcome"`
	// Skippable is whether the package declares the step skippable
	// (skippableWhile), recorded from the IR when the run paused.
	Skippable bool `json:"skippable,omitempty"`
	// TeachRequests counts the teach requests attached to the item; their
	// text is operator text, read with ledger.TeachRequestsOf, never shown here.
	TeachRequests int `json:"teach_requests,omitempty"`
	// Kind is "" for an approval and KindDownstreamQuestion for a
	// question the app asked during a change. A question records only
	// the connection it came from and digests of the app's message, of
	// its requested form and of the person's answer; the answer's action
	// (accept, decline, cancel) is a closed word.
	Kind          string `json:"kind,omitempty"`
	Connection    string `json:"connection,omitempty"`
	MessageDigest string `json:"message_digest,omitempty"`
	SchemaDigest  string `json:"schema_digest,omitempty"`
	AnswerAction  string `json:"answer_action,omitempty"`
	AnswerDigest  string `json:"answer_digest,omitempty"`
}

// Attention states.
const (
	AttentionOpen      = "open"
	AttentionApproved  = "approved"
	AttentionRejected  = "rejected"
	AttentionEscalated = "escalated"
	AttentionSkipped   = "skipped"
)

// Decision is a person's decision on an attention item.
type Decision struct {
	AttentionID string
	// Decision is one of contract.Decisions.
	Decision string
	// By names the person; Channel is how the decision arrived: "cli",
	// "elicitation" (the person answered the MCP form) or "mcp" (a
	// rejection or escalation relayed by the calling agent).
	By      string
	Channel string
	// Text is a teach decision's request: operator text, bounded by
	// MaxTeachText and scanned for customer state, never shown to the
	// calling agent.
	Text string
}

// ReadResult is the answer of a read-only capability tool: the downstream
// structured content, checked against the tool's output schema.
type ReadResult struct {
	Capability string           `json:"capability"`
	Outcome    contract.Outcome `json:"outcome"`
	Reason     contract.Reason  `json:"reason"`
	Content    json.RawMessage  `json:"content,omitempty"`
}
