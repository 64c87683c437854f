package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tailscale/hujson"
)

// ScopeLocal and ScopeProject are where Claude Code's entry goes
// (MCPClientOptions.Scope). ScopeLocal is Claude Code's local scope: the
// user's own ~/.claude.json, under projects[DIR].mcpServers, private to
// this person and machine, so the project's .mcp.json, which teams commit
// and share, is never given this machine's paths. ScopeProject is that
// .mcp.json.
const (
	ScopeLocal   = "local"
	ScopeProject = "project"
)

// claudeLocalFormat is Claude Code's local scope: the mcpServers object of
// projects[dir] in ~/.claude.json, edited as jsonFormat edits a file's
// top-level servers object, inside that project's object only; every
// other byte of the file is kept.
type claudeLocalFormat struct {
	// dir is the project folder as Claude Code keys it (absolute, links
	// resolved, as its working folder).
	dir   string
	inner jsonFormat
}

// project finds projects[dir] in b: its value's offsets, or ok false when
// the file has no such object yet. A projects that is not an object, or a
// project that is not one, is refused.
func (f claudeLocalFormat) project(file string, b []byte) (proj projectObject, err error) {
	var v hujson.Value
	var top, projects *hujson.Object
	var ok bool
	if v, err = parseJSON(file, b); err != nil {
		return projectObject{v, nil, nil, 0, 0, false}, err
	}
	if top, ok = v.Value.(*hujson.Object); !ok {
		return projectObject{v, nil, nil, 0, 0, false}, refuseAt(file, b, v.StartOffset, "the file is not a JSON object")
	}
	at, err := member(file, b, top, "projects")
	if err != nil || at < 0 {
		return projectObject{v, top, nil, 0, 0, false}, err
	}
	pv := top.Members[at].Value
	if projects, ok = pv.Value.(*hujson.Object); !ok {
		return projectObject{v, top, nil, 0, 0, false}, refuseAt(file, b, pv.StartOffset, "projects is not an object")
	}
	i, err := member(file, b, projects, f.dir)
	if err != nil || i < 0 {
		return projectObject{v, top, projects, 0, 0, false}, err
	}
	val := projects.Members[i].Value
	if _, ok := val.Value.(*hujson.Object); !ok {
		return projectObject{v, top, projects, 0, 0, false}, refuseAt(file, b, val.StartOffset, "projects[%q] is not an object", f.dir)
	}
	return projectObject{v, top, projects, val.StartOffset, val.EndOffset, true}, nil
}

func (f claudeLocalFormat) get(file string, b []byte, name string) (*ServerEntry, error) {
	proj, err := f.project(file, b)
	start, end, ok := proj.start, proj.end, proj.found
	if err != nil || !ok {
		return nil, err
	}
	return f.inner.get(file, b[start:end], name)
}

func (f claudeLocalFormat) put(file string, b []byte, name string, e ServerEntry) ([]byte, bool, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return f.fresh(name, e), true, nil
	}
	proj, err := f.project(file, b)
	v, top, projects, start, end, ok := proj.v, proj.top, proj.projects, proj.start, proj.end, proj.found
	if err != nil {
		return nil, false, err
	}
	if ok {
		out, added, err := f.inner.put(file, b[start:end], name, e)
		if err != nil {
			return nil, false, err
		}
		return splice(b, start, end, out), added, nil
	}
	// No object for the project yet: add it (and projects), holding only
	// the servers container with the entry.
	n, _ := marshal(name, "")
	servers := []byte(`{"mcpServers":{` + string(n) + `:` + string(f.inner.entryJSON(e)) + `}}`)
	unit := indentUnit(b, top)
	var out []byte
	if projects == nil {
		d, _ := marshal(f.dir, "")
		out = insertMember(b, top, v.StartOffset, unit, "projects", []byte(`{`+string(d)+`:`+string(servers)+`}`))
	} else {
		at, _ := member(file, b, top, "projects")
		out = insertMember(b, projects, top.Members[at].Value.StartOffset, unit, f.dir, servers)
	}
	if got, err := f.get(file, out, name); err != nil || got == nil {
		return nil, false, refuseAt(file, b, 0, "the file cannot be edited without changing other content")
	}
	return out, true, nil
}

func (f claudeLocalFormat) gap(file string, b []byte, name string) *string {
	proj, err := f.project(file, b)
	start, end, ok := proj.start, proj.end, proj.found
	if err != nil || !ok {
		return nil
	}
	return f.inner.gap(file, b[start:end], name)
}

// remove removes the entry; with dropKey, the servers container and then
// the project's object and projects are removed too when left empty (an
// empty project object is nothing to Claude Code).
func (f claudeLocalFormat) remove(file string, b []byte, name string, dropKey bool, gap *string) ([]byte, bool, error) {
	proj, err := f.project(file, b)
	start, end, ok := proj.start, proj.end, proj.found
	if err != nil || !ok {
		return b, false, err
	}
	sub, _, err := f.inner.remove(file, b[start:end], name, dropKey, gap)
	if err != nil {
		return nil, false, err
	}
	out := splice(b, start, end, sub)
	if dropKey {
		var rest map[string]json.RawMessage
		if json.Unmarshal(hujsonStandard(sub), &rest) == nil && len(rest) == 0 {
			if out, err = dropEmpty(out, "/projects/"+pointerEscape(f.dir)); err != nil {
				return nil, false, fmt.Errorf("removing the project's empty object: %w", err)
			}
			var projects map[string]json.RawMessage
			v, _ := hujson.Parse(out)
			var doc map[string]json.RawMessage
			if decodeValue(v, &doc) == nil && json.Unmarshal(doc["projects"], &projects) == nil && len(projects) == 0 {
				if out, err = dropEmpty(out, "/projects"); err != nil {
					return nil, false, err
				}
			}
		}
	}
	v, err := hujson.Parse(out)
	if err != nil {
		return nil, false, err
	}
	var doc map[string]json.RawMessage
	if err := decodeValue(v, &doc); err != nil {
		return nil, false, err
	}
	return out, len(doc) == 0, nil
}

// dropEmpty removes the member at the JSON pointer path of b.
func dropEmpty(b []byte, path string) ([]byte, error) {
	v, err := hujson.Parse(b)
	if err != nil {
		return nil, err
	}
	if err := v.Patch([]byte(`[{"op":"remove","path":` + strconv.Quote(path) + `}]`)); err != nil {
		return nil, err
	}
	return v.Pack(), nil
}

// hujsonStandard is b as standard JSON (comments and trailing commas
// dropped), or b when it does not parse.
func hujsonStandard(b []byte) []byte {
	v, err := hujson.Parse(b)
	if err != nil {
		return b
	}
	v.Standardize()
	return v.Pack()
}

func (f claudeLocalFormat) fresh(name string, e ServerEntry) []byte {
	d, _ := marshal(f.dir, "")
	n, _ := marshal(name, "")
	doc := []byte(`{"projects":{` + string(d) + `:{"mcpServers":{` + string(n) + `:` + string(f.inner.entryJSON(e)) + `}}}}`)
	return append(indented(doc, "", "  "), '\n')
}

// projectObject is where project found projects[dir]: the parsed file,
// its top-level object, the projects object (nil when absent), and the
// project's value's offsets, found false when it has none yet.
type projectObject struct {
	v             hujson.Value
	top, projects *hujson.Object
	start, end    int
	found         bool
}
