package ir

import (
	"regexp"
	"slices"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// The coordinator's own MCP tool names. They live here, at the first
// stage, so that the compiler can refuse a capability whose served tool
// name would take one of them; package harness re-exports them.
const (
	ToolListWorkflows      = "list_workflows"
	ToolRunWorkflow        = "run_workflow"
	ToolGetRun             = "get_run"
	ToolListNeedsAttention = "list_needs_attention"
	ToolGetAttentionItem   = "get_attention_item"
	ToolDecide             = "decide_attention_item"
)

// CoordinatorTools lists the coordinator's own tool names, in the order
// SKILL.md introduces them.
var CoordinatorTools = []string{ToolListWorkflows, ToolRunWorkflow, ToolGetRun, ToolListNeedsAttention, ToolGetAttentionItem, ToolDecide}

// MaxToolName is the longest MCP tool name every common client accepts.
const MaxToolName = 64

// ToolNameRE is the tool name rule of the strictest MCP clients (Claude
// Code and Claude Desktop among them): every name the coordinator serves
// matches it.
var ToolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ToolName is the MCP tool name a capability is served under: its key with
// each '.' written '_' (records.read is served as records_read). A
// capability key is dotted lower-case segments of [a-z0-9_], so the name
// is in ToolNameRE's alphabet; its length and its clashes are checked by
// Validate (CheckToolNames).
func ToolName(capabilityKey string) string {
	return strings.ReplaceAll(capabilityKey, ".", "_")
}

// DirectlyCallable reports whether c is served as its own tool: only a
// read_only capability that needs no person's approval.
func DirectlyCallable(c Capability) bool {
	return c.Risk == ReadOnly && c.Approval == ApprovalNotRequired
}

// CheckToolNames refuses, at capabilities.KEY, every served capability
// (keys lists the capabilities that will be served as tools) whose tool
// name is too long for MCP clients or is also the name of a coordinator
// tool or of another served capability (a.b_c and a_b.c are both a_b_c).
func CheckToolNames(keys []string) []Problem {
	var problems []Problem
	first := map[string]string{} // tool name → the key that took it
	for _, key := range slices.Sorted(slices.Values(keys)) {
		name := ToolName(key)
		path := []string{"capabilities", key}
		switch {
		case len(name) > MaxToolName || !ToolNameRE.MatchString(name):
			problems = append(problems, Problem{blocking.ToolNameTooLong, path, "served as MCP tool " + shorten(name) + ", longer than 64 characters (or outside [a-zA-Z0-9_-])"})
		case slices.Contains(CoordinatorTools, name):
			problems = append(problems, Problem{blocking.ToolNameClash, path, "served as MCP tool " + name + ", the name of a coordinator tool"})
		case first[name] != "":
			problems = append(problems, Problem{blocking.ToolNameClash, path, "served as MCP tool " + name + ", the same name as capability " + first[name]})
		default:
			first[name] = key
		}
	}
	return problems
}

// shorten keeps a long name readable in a message.
func shorten(name string) string {
	if len(name) <= 72 {
		return name
	}
	return name[:64] + "…"
}

// servedKeys lists w's capabilities that are served as their own tools.
func servedKeys(w *Worker) []string {
	var keys []string
	for _, c := range w.Capabilities {
		if DirectlyCallable(c) {
			keys = append(keys, c.Key)
		}
	}
	return keys
}
