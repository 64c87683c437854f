package ir

import (
	"slices"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

// The coordinator's tool names, the MCP tool name rule and the name a
// capability is served under live in package contract, the leaf every
// stage shares, so that this first stage can refuse a capability whose
// served name would take a coordinator tool's without importing a later
// stage.

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
		name := contract.ToolName(key)
		path := []string{"capabilities", key}
		switch {
		case !contract.ValidToolName(name):
			problems = append(problems, Problem{blocking.ToolNameTooLong, path, "served as MCP tool " + shorten(name) + ", longer than 64 characters (or outside [a-zA-Z0-9_-])"})
		case slices.Contains(contract.CoordinatorTools, name):
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
