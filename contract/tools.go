package contract

import (
	"regexp"
	"strings"
)

// The coordinator's own MCP tool names. The coordinator serves exactly
// these plus the read-only capability tools of the projection; SKILL.md
// tells a calling agent how to use them.
const (
	// ToolListWorkflows lists the workflows a calling agent may start.
	ToolListWorkflows = "list_workflows"
	// ToolRunWorkflow starts (or replays) a workflow run for a request.
	ToolRunWorkflow = "run_workflow"
	// ToolGetRun returns a run's result, waiting for a terminal outcome.
	ToolGetRun = "get_run"
	// ToolListNeedsAttention lists the paused runs waiting for a person.
	ToolListNeedsAttention = "list_needs_attention"
	// ToolGetAttentionItem shows one paused run waiting for a person.
	ToolGetAttentionItem = "get_attention_item"
	// ToolDecide relays a person's decision on a paused run: one of
	// Decisions.
	ToolDecide = "decide_attention_item"
)

// CoordinatorTools lists the coordinator's own tool names, in the order
// SKILL.md introduces them.
var CoordinatorTools = []string{ToolListWorkflows, ToolRunWorkflow, ToolGetRun, ToolListNeedsAttention, ToolGetAttentionItem, ToolDecide}

// MaxToolName is the longest MCP tool name every common client accepts.
const MaxToolName = 64

// ToolNamePattern is the tool name rule of the strictest MCP clients
// (Claude Code and Claude Desktop among them): every name the coordinator
// serves matches it. ValidToolName is the check; this is its statement.
const ToolNamePattern = `^[a-zA-Z0-9_-]{1,64}$`

// toolNameChars is ToolNamePattern's alphabet. The length is checked apart
// because a counted repetition compiles into one copy of the class per
// place, which every oa process would pay at start whether it checks a
// name or not.
var toolNameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// ValidToolName reports whether name matches ToolNamePattern: 1 to
// MaxToolName characters of [a-zA-Z0-9_-].
func ValidToolName(name string) bool {
	return len(name) <= MaxToolName && toolNameChars.MatchString(name)
}

// IDPattern is the rule of every id an agent passes the coordinator (its
// request_id, and the run and attention ids it was given), as the tool
// schemas state it to clients; ValidID is the check.
const IDPattern = `^[A-Za-z0-9._:-]{1,128}$`

// MaxID is the longest id IDPattern allows.
const MaxID = 128

// idChars is IDPattern's alphabet (the length apart, as for toolNameChars).
var idChars = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// ValidID reports whether id matches IDPattern.
func ValidID(id string) bool {
	return len(id) <= MaxID && idChars.MatchString(id)
}

// ToolName is the MCP tool name a capability is served under: its key with
// each '.' written '_' (records.read is served as records_read). A
// capability key is dotted lower-case segments of [a-z0-9_], so the name
// is in ToolNamePattern's alphabet; its length and its clashes are checked by
// ir.Validate (ir.CheckToolNames).
func ToolName(capabilityKey string) string {
	return strings.ReplaceAll(capabilityKey, ".", "_")
}

// Argument names of the coordinator tools, as SKILL.md documents them.
const (
	// ArgWorkflow names the workflow run_workflow starts.
	ArgWorkflow = "workflow"
	// ArgInputs carries the workflow inputs, exactly as the person gave them.
	ArgInputs = "inputs"
	// ArgRequestID is the caller's idempotency key of one intended change.
	ArgRequestID = "request_id"
	// ArgWaitSeconds is how long run_workflow and get_run wait for a
	// terminal outcome.
	ArgWaitSeconds = "wait_seconds"
	// ArgRunID names the run get_run reports on.
	ArgRunID = "run_id"
	// ArgAttentionID names a paused run waiting for a person.
	ArgAttentionID = "attention_id"
	// ArgDecision carries a person's decision: one of Decisions.
	ArgDecision = "decision"
)

// Wait limits of run_workflow and get_run, in seconds.
const (
	// WaitSecondsDefault is the wait when wait_seconds is absent.
	WaitSecondsDefault = 60
	// WaitSecondsMax is the longest wait a caller may ask for.
	WaitSecondsMax = 600
)

// Decisions a person may make on a paused run, relayed by ToolDecide.
const (
	// DecisionApprove lets the paused step go on when its caller asks again.
	DecisionApprove = "approve"
	// DecisionReject ends the run with nothing written.
	DecisionReject = "reject"
	// DecisionEscalate keeps the run stopped for others to decide.
	DecisionEscalate = "escalate"
	// DecisionSkip lets the run go on without the paused step, where the
	// package declares the step skippable and while its guard holds.
	DecisionSkip = "skip"
	// DecisionTeach records a request for a revised package version on
	// the item and leaves the pause as it is.
	DecisionTeach = "teach"
)

// Decisions lists the decisions ToolDecide accepts.
var Decisions = []string{DecisionApprove, DecisionReject, DecisionEscalate, DecisionSkip, DecisionTeach}
