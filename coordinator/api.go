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
	// ProbeInBackground makes Open return once the plan checks, and start
	// and check every downstream server in the background: a step that
	// needs a server waits for that, and a server whose check failed is
	// told to the operator and refused to every step that needs it, as a
	// server changed mid-session is (tool_drift, app_offline). So a
	// session is answered while its servers start (what `oa coordinator
	// serve` uses); without it Open returns only once every server
	// checked, and refuses to open when one did not.
	ProbeInBackground bool
	// MaxRuns bounds the runs this process executes at once; 0 means
	// DefaultMaxRuns. A run over the bound is stored and waits its turn
	// (a caller whose wait ends meanwhile is answered running), so a burst
	// of calls never floods the downstream servers or the host.
	MaxRuns int
	// Installation is the MCP client installation served, whose
	// host-held key signs the answers a person gives at the client
	// (decider.go); nil when none is named.
	Installation *Installation
	// Client names the MCP client installation served (`oa coordinator
	// serve --client`, written by `oa harness install --person`): Open
	// loads the key the host holds for it and finds the person the host
	// policy names with that key, as Installation. Ignored when
	// Installation is given.
	Client string
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

// ReadResult is the answer of a read-only capability tool: the downstream
// structured content, checked against the tool's output schema, and for
// a tool without one the server's content blocks as it sent them
// (bounded by connector.MaxContentBytes). Both are the app's own words:
// they go to the calling agent only, never to the operator, telemetry or
// a record.
type ReadResult struct {
	Capability string           `json:"capability"`
	Outcome    contract.Outcome `json:"outcome"`
	Reason     contract.Reason  `json:"reason"`
	Content    json.RawMessage  `json:"content,omitempty"`
	// ServerContent is the JSON array of the server's content blocks
	// (text, image, audio, resource_link, resource), for a tool without
	// an output schema; ContentCut says they were over the bound and cut.
	ServerContent json.RawMessage `json:"server_content,omitempty"`
	ContentCut    bool            `json:"content_cut,omitempty"`
}
