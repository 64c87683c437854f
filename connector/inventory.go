package connector

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
)

// Annotations are a tool's behaviour hints. After normalization every hint
// is set: a hint the server left out holds the MCP default (readOnly false,
// destructive true, idempotent false, openWorld true), so a server that
// states a default and one that omits it list the same tool.
type Annotations struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// Tool is one downstream tool as listed, normalized.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`            // canonical JSON (RFC 8785)
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"` // canonical JSON
	Annotations  Annotations     `json:"annotations"`
	// Digest is "sha256:<hex>" of the canonical JSON of this Tool with
	// Digest "": name, description, schemas and annotations. Title, icons
	// and _meta are display data and left out.
	Digest string `json:"digest"`
}

// Inventory is a server's whole tool list, sorted by name.
type Inventory struct {
	Tools []Tool `json:"tools"`
	// Digest is "sha256:<hex>" of the canonical JSON of Tools.
	Digest string `json:"digest"`
}

// Tool returns the tool called name.
func (inv *Inventory) Tool(name string) (Tool, bool) {
	i, ok := slices.BinarySearchFunc(inv.Tools, name, func(t Tool, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return Tool{}, false
	}
	return inv.Tools[i], true
}

// toolNameChars is the alphabet of the MCP tool naming rule (2025-11-25):
// 1–128 of A-Z a-z 0-9 _ - . (validToolName checks the length apart: a
// counted repetition compiles into one copy of the class per place, paid
// by every oa process at start).
var toolNameChars = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// maxToolName is the longest tool name the MCP naming rule allows.
const maxToolName = 128

// validToolName reports whether name follows the MCP tool naming rule.
func validToolName(name string) bool {
	return len(name) <= maxToolName && toolNameChars.MatchString(name)
}

// digestOf returns "sha256:<hex>" of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// newInventory normalizes raw, the tools exactly as the server listed them
// (every page, in order), and refuses a list that breaks the tool rules. A
// refusal points at a tool by its position in the server's list, never by
// anything the server wrote.
func newInventory(raw []*mcp.Tool) (*Inventory, map[string]checker, error) {
	var errs blocking.List
	byName := map[string]int{}
	checks := map[string]checker{}
	tools := make([]Tool, 0, len(raw))
	for i, rt := range raw {
		path := fmt.Sprintf("tools[%d]", i)
		t, err := normalizeTool(rt)
		if err != nil {
			errs = append(errs, err.At("", path))
			continue
		}
		c, cerr := newChecker(t)
		if cerr != nil {
			errs = append(errs, blocking.New(blocking.ConnectorInventoryInvalid, "schema: %s", cerr).At("", path))
			continue
		}
		if first, dup := byName[t.Name]; dup {
			errs = append(errs, blocking.New(blocking.ConnectorInventoryInvalid, "the name is also used by tools[%d]", first).At("", path))
			continue
		}
		byName[t.Name] = i
		checks[t.Name] = c
		tools = append(tools, t)
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	b, err := canonical.Marshal(tools)
	if err != nil {
		return nil, nil, blocking.New(blocking.ConnectorInventoryInvalid, "the tool list has no canonical JSON form")
	}
	return &Inventory{Tools: tools, Digest: digestOf(b)}, checks, nil
}

// normalizeTool checks one listed tool and returns it normalized, digest set.
func normalizeTool(rt *mcp.Tool) (Tool, *blocking.Error) {
	invalid := func(rule string) (Tool, *blocking.Error) {
		return Tool{}, blocking.New(blocking.ConnectorInventoryInvalid, "%s", rule)
	}
	if rt == nil {
		return invalid("the entry is not a tool")
	}
	if !validToolName(rt.Name) {
		return invalid("the name breaks the MCP tool naming rule")
	}
	if strings.TrimSpace(rt.Description) == "" {
		return invalid("the tool has no description")
	}
	in, err := objectSchema(rt.InputSchema)
	if err != nil {
		return invalid("input schema: " + err.Error())
	}
	t := Tool{Name: rt.Name, Description: rt.Description, InputSchema: in, Annotations: normalizeAnnotations(rt.Annotations)}
	if rt.OutputSchema != nil {
		out, err := objectSchema(rt.OutputSchema)
		if err != nil {
			return invalid("output schema: " + err.Error())
		}
		t.OutputSchema = out
	}
	b, cerr := canonical.Marshal(t) // Digest is still empty here
	if cerr != nil {
		return invalid("the tool has no canonical JSON form")
	}
	t.Digest = digestOf(b)
	return t, nil
}

// ruleError is a rule name; its text is fixed and never holds input.
type ruleError string

func (r ruleError) Error() string { return string(r) }

// objectSchema returns the canonical JSON of schema, which must be a JSON
// object whose "type" is "object": MCP passes arguments and structured
// results as JSON objects, so any other schema cannot describe them.
func objectSchema(schema any) (json.RawMessage, error) {
	if schema == nil {
		return nil, ruleError("missing")
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, ruleError("not JSON")
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, ruleError("not a JSON object")
	}
	var typ string
	if json.Unmarshal(m["type"], &typ) != nil || typ != "object" {
		return nil, ruleError(`its type is not "object"`)
	}
	c, err := canonical.Transform(b)
	if err != nil {
		return nil, ruleError("no canonical JSON form")
	}
	return c, nil
}

// normalizeAnnotations fills every hint, with the MCP default where the
// server gave none. The go-sdk decodes readOnlyHint and idempotentHint into
// plain bools, so absent and false are already the same there; filling the
// pointer hints the same way keeps the digest independent of how a server
// spells a default.
func normalizeAnnotations(a *mcp.ToolAnnotations) Annotations {
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	orDefault := func(p *bool, def bool) *bool {
		if p != nil {
			def = *p
		}
		return &def
	}
	readOnly, idempotent := a.ReadOnlyHint, a.IdempotentHint
	return Annotations{
		ReadOnly:    &readOnly,
		Destructive: orDefault(a.DestructiveHint, true),
		Idempotent:  &idempotent,
		OpenWorld:   orDefault(a.OpenWorldHint, true),
	}
}
