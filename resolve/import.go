package resolve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/ir"
)

// ImportedTool is one registry entry oa registry import wrote (or would
// write) for a tool of a connection's verified inventory: disabled, its
// capability a suggested key for the operator to map.
type ImportedTool struct {
	Name       string  `json:"name"`
	Capability string  `json:"capability"`
	Risk       ir.Risk `json:"risk"`
	// Destructive is the tool's destructiveHint: the server says it may
	// destroy data.
	Destructive bool `json:"destructive,omitempty"`
}

// Import is what ImportConnection did to the registry file.
type Import struct {
	Connection string `json:"connection"`
	Connector  string `json:"connector"`
	// Added are the entries written, disabled, in inventory order.
	Added []ImportedTool `json:"added"`
	// Kept are the tools the registry lists for the connector already,
	// left exactly as they are.
	Kept []string `json:"kept"`
	// ConnectorAdded says the connector was not in the registry and was
	// added, disabled.
	ConnectorAdded bool `json:"connectorAdded,omitempty"`
	// Written is false when there was nothing to add.
	Written bool `json:"written"`
}

// ImportConnection adds to the registry file at path one entry for each
// tool of connection name's verified inventory the registry does not list
// yet for its connector: disabled, with the risk its annotations give
// (readOnlyHint true: read_only, anything else: consequential, a
// destructiveHint noted) and a suggested capability key. The connector is
// added, disabled, when the registry lacks it. Nothing is enabled and no
// existing entry is changed: a tool the registry lists already is kept
// and named. The file stays as written otherwise, so the operator maps
// the entries and signs the registry (which is unsigned until then).
func ImportConnection(ctx context.Context, h *host.Host, path, name string) (*Import, error) {
	rec, err := connection.Get(ctx, h, name)
	if err != nil {
		return nil, err
	}
	if !rec.Verified() {
		return nil, blocking.New(blocking.RegistryImportUnverified, "connection %s revision %d is not verified", name, rec.Revision)
	}
	r, err := LoadRegistry(path)
	if err != nil {
		return nil, err
	}
	canon, alias := r.Canonical(rec.Connector)
	if alias {
		return nil, blocking.New(blocking.ConnectorNotCanonical, "connection %s names connector alias %s; the canonical id is %s", name, rec.Connector, canon)
	}
	imp := &Import{Connection: name, Connector: rec.Connector, Added: []ImportedTool{}, Kept: []string{}, ConnectorAdded: canon == ""}
	listed := map[string]bool{}
	for _, t := range r.Tools {
		if t.Connector == rec.Connector {
			listed[t.Name] = true
		}
	}
	for _, t := range rec.Verification.Inventory.Tools {
		if listed[t.Name] {
			imp.Kept = append(imp.Kept, t.Name)
			continue
		}
		imp.Added = append(imp.Added, importedTool(rec.Connector, t))
	}
	if len(imp.Added) == 0 && !imp.ConnectorAdded {
		return imp, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, blocking.New(blocking.RegistryUnreadable, "the registry file cannot be read")
	}
	out, err := importInto(src, path, imp)
	if err != nil {
		return nil, err
	}
	// The edited file must load, with exactly the entries added.
	tmp, err := os.MkdirTemp("", "oa-registry-import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	check := filepath.Join(tmp, RegistryFile)
	if err := os.WriteFile(check, out, 0o600); err != nil {
		return nil, err
	}
	after, err := LoadRegistry(check)
	if err != nil || len(after.Tools) != len(r.Tools)+len(imp.Added) {
		return nil, blocking.New(blocking.RegistryImportUneditable, "the registry with the entries added does not load as one")
	}
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, out, perm); err != nil {
		return nil, err
	}
	imp.Written = true
	return imp, nil
}

// importedTool is the entry for t: its risk from the annotations and a
// capability key made from the connector and tool names.
func importedTool(connectorID string, t connector.Tool) ImportedTool {
	risk := ir.Consequential
	if t.Annotations.ReadOnly != nil && *t.Annotations.ReadOnly {
		risk = ir.ReadOnly
	}
	destructive := t.Annotations.Destructive != nil && *t.Annotations.Destructive
	return ImportedTool{Name: t.Name, Capability: suggestedKey(connectorID, t.Name), Risk: risk, Destructive: destructive && risk != ir.ReadOnly}
}

var keyRune = regexp.MustCompile(`[^a-z0-9_]+`)

// suggestedKey is a capability key for a connector's tool: the
// connector's and the tool's names, lower case, each run of other
// characters an underscore, every segment starting with a letter.
func suggestedKey(connectorID, tool string) string {
	var segs []string
	for _, part := range append(strings.FieldsFunc(connectorID, func(r rune) bool { return r == '.' }), tool) {
		s := strings.Trim(keyRune.ReplaceAllString(strings.ToLower(part), "_"), "_")
		if s == "" {
			continue
		}
		if s[0] < 'a' || s[0] > 'z' {
			s = "t_" + s
		}
		segs = append(segs, s)
	}
	key := strings.Join(segs, ".")
	if len(key) > 128 {
		key = strings.TrimRight(key[:128], "._")
	}
	return key
}

// importInto returns src with imp's entries inserted before the closing
// bracket of its top-level tools list (and its connector appended as a
// struct of its own, which CUE unifies with the file's connectors).
func importInto(src []byte, path string, imp *Import) ([]byte, error) {
	f, err := parser.ParseFile(path, src, parser.ParseComments)
	if err != nil {
		return nil, blocking.New(blocking.RegistryImportUneditable, "the registry file does not parse")
	}
	var list *ast.ListLit
	for _, d := range f.Decls {
		field, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if name, _, _ := ast.LabelName(field.Label); name == "tools" {
			if list != nil {
				return nil, blocking.New(blocking.RegistryImportUneditable, "the file declares tools more than once")
			}
			if list, ok = field.Value.(*ast.ListLit); !ok {
				return nil, blocking.New(blocking.RegistryImportUneditable, "tools is not a list literal")
			}
		}
	}
	var entries strings.Builder
	fmt.Fprintf(&entries, "\t// Imported by `oa registry import %s`: disabled. Map each to a\n\t// capability of this registry (declared under capabilities), enable those\n\t// a package uses, then `oa registry sign --as NAME`.\n", imp.Connection)
	for _, t := range imp.Added {
		note := "annotations: readOnlyHint"
		if t.Risk != ir.ReadOnly {
			note = "annotations: not readOnlyHint"
		}
		if t.Destructive {
			note += ", destructiveHint (may destroy data)"
		}
		fmt.Fprintf(&entries, "\t{name: %s, connector: %s, capability: %s, risk: %q, enabled: false}, // %s\n",
			quote(t.Name), quote(imp.Connector), quote(t.Capability), t.Risk, note)
	}
	var out []byte
	if list == nil {
		out = append(append([]byte{}, src...), "\ntools: [\n"+entries.String()+"]\n"...)
	} else {
		at := list.Rbrack.Offset()
		if at <= 0 || at > len(src) || src[at] != ']' {
			return nil, blocking.New(blocking.RegistryImportUneditable, "the tools list's end cannot be found")
		}
		head := src[:at]
		if n := len(list.Elts); n > 0 {
			end := list.Elts[n-1].End().Offset()
			if end <= 0 || end > at {
				return nil, blocking.New(blocking.RegistryImportUneditable, "the tools list's last entry cannot be found")
			}
			if !strings.Contains(string(src[end:at]), ",") {
				head = append(append(append([]byte{}, src[:end]...), ','), src[end:at]...)
			}
		}
		body := entries.String()
		if !strings.HasSuffix(strings.TrimRight(string(head), " \t"), "\n") {
			body = "\n" + body
		}
		out = append(append(append([]byte{}, head...), body...), src[at:]...)
	}
	if imp.ConnectorAdded {
		out = fmt.Appendf(out, "\n// Imported by `oa registry import %s`: enable the connector once its\n// tools are mapped.\nconnectors: %s: {\n\taliases: []\n\tavailability: \"available\"\n\tenabled: false\n}\n", imp.Connection, quote(imp.Connector))
	}
	return out, nil
}

// quote is s as a CUE (and JSON) string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
