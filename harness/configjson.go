package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/oa-dev/oa/blocking"
)

// configFormat reads and edits one kind of client configuration file. An
// edit changes the deployment's entry only: every other byte of the file,
// comments included, is kept where the format allows, and the result is
// parsed again and compared with the original before it is returned, so
// an edit that would change anything else is refused instead of written.
type configFormat interface {
	// get returns the entry called name, or nil when there is none.
	get(file string, b []byte, name string) (*ServerEntry, error)
	// put returns b with the entry called name set to e; addedKey says the
	// servers container did not exist before.
	put(file string, b []byte, name string, e ServerEntry) (out []byte, addedKey bool, err error)
	// gap is the text put would replace in b that removing the entry
	// alone does not give back (ServerRecord.Gap), nil when none.
	gap(file string, b []byte, name string) *string
	// remove returns b without the entry called name, and without the
	// servers container when dropKey is set and it is left empty; empty
	// says nothing but an empty document is left. gap, when set, is what
	// gap said of the file before the entry was put in: it is put back.
	remove(file string, b []byte, name string, dropKey bool, gap *string) (out []byte, empty bool, err error)
	// fresh is a new file holding only the entry.
	fresh(name string, e ServerEntry) []byte
}

// jsonFormat is a JSON (or JSON with comments and trailing commas) file
// whose top-level member key holds the servers, one member per server.
// Each entry written is {…fixed, "command", "args", "env"}.
type jsonFormat struct {
	key string
	// fixed are members every entry starts with, such as "type": "stdio".
	fixed [][2]string
	// accepted are members an entry may hold, with this value only: an
	// earlier form of the client's entry, still read (Zed's 2025
	// "source": "custom"), never written.
	accepted [][2]string
}

// unparsable refuses a configuration file that does not parse, naming the
// file and the line and column where it stops.
func unparsable(file string, line, col int, what string) *blocking.Error {
	return blocking.New(blocking.HarnessClientConfigInvalid, "the file is not %s; fix it by hand (oa never rewrites a file it cannot read)", what).At(fmt.Sprintf("%s:%d:%d", file, line, col), "")
}

var hujsonPos = regexp.MustCompile(`line (\d+), column (\d+)`)

// parseJSON parses b as JSON with comments, refusing it with its line.
func parseJSON(file string, b []byte) (hujson.Value, error) {
	v, err := hujson.Parse(b)
	if err != nil {
		line, col := 1, 1
		if m := hujsonPos.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			col, _ = strconv.Atoi(m[2])
		}
		return v, unparsable(file, line, col, "JSON")
	}
	return v, nil
}

// lineCol is the 1-based line and column of offset n in b.
func lineCol(b []byte, n int) (int, int) {
	line := 1 + bytes.Count(b[:n], []byte("\n"))
	return line, 1 + n - (bytes.LastIndexByte(b[:n], '\n') + 1)
}

// refuseAt refuses the file at offset n of b.
func refuseAt(file string, b []byte, n int, format string, args ...any) *blocking.Error {
	line, col := lineCol(b, n)
	return blocking.New(blocking.HarnessClientConfigInvalid, format, args...).At(fmt.Sprintf("%s:%d:%d", file, line, col), "")
}

// member returns the index of the member called name in obj, -1 when
// there is none; a name given twice is refused (readers disagree on which
// one counts).
func member(file string, b []byte, obj *hujson.Object, name string) (int, error) {
	at := -1
	for i, m := range obj.Members {
		lit, ok := m.Name.Value.(hujson.Literal)
		if !ok || lit.String() != name {
			continue
		}
		if at >= 0 {
			return -1, refuseAt(file, b, m.Name.StartOffset, "the member %q is given twice", name)
		}
		at = i
	}
	return at, nil
}

// servers parses b and returns its top-level object and the servers
// object (nil when the key is absent) with its index among the members.
func (f jsonFormat) servers(file string, b []byte) (parsed parsedServers, err error) {
	var v hujson.Value
	var top, srv *hujson.Object
	var at int
	if v, err = parseJSON(file, b); err != nil {
		return parsedServers{v, nil, nil, -1}, err
	}
	top, ok := v.Value.(*hujson.Object)
	if !ok {
		return parsedServers{v, nil, nil, -1}, refuseAt(file, b, v.StartOffset, "the file is not a JSON object")
	}
	if at, err = member(file, b, top, f.key); err != nil || at < 0 {
		return parsedServers{v, top, nil, at}, err
	}
	val := top.Members[at].Value
	if srv, ok = val.Value.(*hujson.Object); !ok {
		return parsedServers{v, top, nil, -1}, refuseAt(file, b, val.StartOffset, "%s is not an object", f.key)
	}
	return parsedServers{v, top, srv, at}, nil
}

// decodeValue decodes one hujson value as standard JSON into out.
func decodeValue(v hujson.Value, out any) error {
	v = v.Clone()
	v.Standardize()
	return json.Unmarshal(v.Pack(), out)
}

func (f jsonFormat) get(file string, b []byte, name string) (*ServerEntry, error) {
	parsed, err := f.servers(file, b)
	srv := parsed.srv
	if err != nil || srv == nil {
		return nil, err
	}
	i, err := member(file, b, srv, name)
	if err != nil || i < 0 {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := decodeValue(srv.Members[i].Value, &raw); err != nil || raw == nil {
		return nil, blocking.New(blocking.HarnessServerEntryChanged, "the %s entry is not an object", name)
	}
	for _, kv := range f.fixed {
		var s string
		if json.Unmarshal(raw[kv[0]], &s) != nil || s != kv[1] {
			return nil, blocking.New(blocking.HarnessServerEntryChanged, "the %s entry's %s is not %q", name, kv[0], kv[1])
		}
	}
	for _, kv := range f.accepted {
		var s string
		if v, ok := raw[kv[0]]; ok && (json.Unmarshal(v, &s) != nil || s != kv[1]) {
			return nil, blocking.New(blocking.HarnessServerEntryChanged, "the %s entry's %s is not %q", name, kv[0], kv[1])
		}
	}
	var e ServerEntry
	if err := decodeValue(srv.Members[i].Value, &e); err != nil {
		return nil, blocking.New(blocking.HarnessServerEntryChanged, "the %s entry is not a command entry", name)
	}
	return &e, nil
}

// entryJSON is e as the client reads it: the fixed members, then command,
// args and env, compact, without HTML escaping.
func (f jsonFormat) entryJSON(e ServerEntry) []byte {
	var buf bytes.Buffer
	buf.WriteByte('{')
	add := func(k string, v any) {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		kb, _ := marshal(k, "")
		vb, _ := marshal(v, "")
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	for _, kv := range f.fixed {
		add(kv[0], kv[1])
	}
	args, env := e.Args, e.Env
	if args == nil {
		args = []string{}
	}
	if env == nil {
		env = map[string]string{}
	}
	add("command", e.Command)
	add("args", args)
	add("env", env)
	buf.WriteByte('}')
	return buf.Bytes()
}

// indented renders compact JSON with prefix before every line but the
// first, and unit per level.
func indented(compact []byte, prefix, unit string) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, prefix, unit); err != nil {
		panic("harness: indenting JSON oa rendered: " + err.Error())
	}
	return buf.Bytes()
}

func (f jsonFormat) fresh(name string, e ServerEntry) []byte {
	key, _ := marshal(f.key, "")
	n, _ := marshal(name, "")
	doc := []byte(`{` + string(key) + `:{` + string(n) + `:` + string(f.entryJSON(e)) + `}}`)
	return append(indented(doc, "", "  "), '\n')
}

func (f jsonFormat) put(file string, b []byte, name string, e ServerEntry) ([]byte, bool, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return f.fresh(name, e), true, nil
	}
	parsed, err := f.servers(file, b)
	v, top, srv, at := parsed.v, parsed.top, parsed.srv, parsed.at
	if err != nil {
		return nil, false, err
	}
	unit := indentUnit(b, top)
	entry := f.entryJSON(e)
	var out []byte
	if srv == nil {
		n, _ := marshal(name, "")
		value := []byte(`{` + string(n) + `:` + string(entry) + `}`)
		out = insertMember(b, top, v.StartOffset, unit, f.key, value)
	} else {
		i, err := member(file, b, srv, name)
		if err != nil {
			return nil, false, err
		}
		if i >= 0 {
			val := srv.Members[i].Value
			text := indented(entry, lineIndent(b, srv.Members[i].Name.StartOffset), unit)
			out = splice(b, val.StartOffset, val.EndOffset, text)
		} else {
			out = insertMember(b, srv, top.Members[at].Value.StartOffset, unit, name, entry)
		}
	}
	if err := f.checkEdit(file, b, out, name, entry, srv == nil); err != nil {
		return nil, false, err
	}
	return out, srv == nil, nil
}

// gap is the inside of the empty object put fills (the servers
// container, or the top-level object when the container is added to an
// empty one), when it holds only whitespace: put replaces it with the
// entry laid out on lines of its own, and hujson leaves a newline when the
// entry is removed.
func (f jsonFormat) gap(file string, b []byte, name string) *string {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	parsed, err := f.servers(file, b)
	v, top, srv, at := parsed.v, parsed.top, parsed.srv, parsed.at
	if err != nil {
		return nil
	}
	obj, start := top, v.StartOffset
	if srv != nil {
		if i, err := member(file, b, srv, name); err != nil || i >= 0 {
			return nil
		}
		obj, start = srv, top.Members[at].Value.StartOffset
	}
	if len(obj.Members) > 0 {
		return nil
	}
	inner := string(b[start+1 : start+len(obj.AfterExtra)+1])
	if strings.TrimSpace(inner) != "" {
		return nil
	}
	return &inner
}

func (f jsonFormat) remove(file string, b []byte, name string, dropKey bool, gap *string) ([]byte, bool, error) {
	parsed, err := f.servers(file, b)
	v, top, srv := parsed.v, parsed.top, parsed.srv
	if err != nil {
		return nil, false, err
	}
	if srv == nil {
		return b, false, nil
	}
	i, err := member(file, b, srv, name)
	if err != nil || i < 0 {
		return b, false, err
	}
	path := "/" + pointerEscape(f.key)
	obj := top
	if !dropKey || len(srv.Members) > 1 {
		path += "/" + pointerEscape(name)
		obj = srv
	}
	// A trailing comma after the last member stays when the last member
	// is removed (hujson writes one when the last value's AfterExtra is
	// not nil).
	last := len(obj.Members) - 1
	trailing := obj.Members[last].Value.AfterExtra != nil
	if err := v.Patch([]byte(`[{"op":"remove","path":` + strconv.Quote(path) + `}]`)); err != nil {
		return nil, false, fmt.Errorf("removing the %s entry: %w", name, err)
	}
	if n := len(obj.Members); trailing && n == last && n > 0 && obj.Members[n-1].Value.AfterExtra == nil {
		obj.Members[n-1].Value.AfterExtra = hujson.Extra{}
	}
	if len(obj.Members) == 0 && gap != nil && len(bytes.TrimSpace(obj.AfterExtra)) == 0 {
		obj.AfterExtra = hujson.Extra(*gap)
	}
	out := v.Pack()
	var rest map[string]json.RawMessage
	if err := decodeValue(v, &rest); err != nil {
		return nil, false, err
	}
	return out, len(rest) == 0, nil
}

// checkEdit parses the edited file and compares it with the original:
// the same document but for the entry called name, which must be entry
// (and the servers container, when it was added).
func (f jsonFormat) checkEdit(file string, before, after []byte, name string, entry []byte, addedKey bool) error {
	decode := func(b []byte) (map[string]any, error) {
		v, err := hujson.Parse(b)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		err = decodeValue(v, &m)
		return m, err
	}
	old, err := decode(before)
	if err != nil {
		return err
	}
	edited, err := decode(after)
	if err != nil {
		return fmt.Errorf("the edited %s does not parse: %w", f.key, err)
	}
	var want any
	if err := json.Unmarshal(entry, &want); err != nil {
		return err
	}
	srv, _ := edited[f.key].(map[string]any)
	if !reflect.DeepEqual(srv[name], want) {
		return errors.New("harness: the edited configuration does not hold the entry")
	}
	delete(srv, name)
	if addedKey && len(srv) == 0 {
		delete(edited, f.key)
	}
	if o, ok := old[f.key].(map[string]any); ok {
		delete(o, name)
	}
	if !reflect.DeepEqual(old, edited) {
		return refuseAt(file, before, 0, "the file cannot be edited without changing other content")
	}
	return nil
}

// insertMember inserts "name": value (compact JSON) as the last member of
// obj, which starts at offset start of b: after its last member, indented
// like it, or alone in an empty object, one unit deeper than the object's
// line. A trailing comma or comment after the last member stays after the
// new one.
func insertMember(b []byte, obj *hujson.Object, start int, unit, name string, value []byte) []byte {
	n, _ := marshal(name, "")
	if len(obj.Members) > 0 {
		last := obj.Members[len(obj.Members)-1]
		indent := lineIndent(b, last.Name.StartOffset)
		text := ",\n" + indent + string(n) + ": " + string(indented(value, indent, unit))
		return splice(b, last.Value.EndOffset, last.Value.EndOffset, []byte(text))
	}
	outer := lineIndent(b, start)
	indent := outer + unit
	text := "\n" + indent + string(n) + ": " + string(indented(value, indent, unit))
	inner := b[start+1 : start+len(obj.AfterExtra)+1]
	if len(bytes.TrimSpace(inner)) == 0 {
		return splice(b, start+1, start+1+len(inner), []byte(text+"\n"+outer))
	}
	return splice(b, start+1, start+1, []byte(text))
}

// splice returns b with b[from:to] replaced by text.
func splice(b []byte, from, to int, text []byte) []byte {
	out := make([]byte, 0, len(b)+len(text))
	out = append(out, b[:from]...)
	out = append(out, text...)
	return append(out, b[to:]...)
}

// lineIndent is the whitespace that starts the line holding offset n.
func lineIndent(b []byte, n int) string {
	start := bytes.LastIndexByte(b[:n], '\n') + 1
	end := start
	for end < len(b) && (b[end] == ' ' || b[end] == '\t') {
		end++
	}
	return string(b[start:end])
}

// indentUnit is the file's indentation step: the indentation of the first
// top-level member on its own line, else two spaces.
func indentUnit(b []byte, top *hujson.Object) string {
	for _, m := range top.Members {
		if in := lineIndent(b, m.Name.StartOffset); in != "" && strings.TrimSpace(string(b[bytes.LastIndexByte(b[:m.Name.StartOffset], '\n')+1:m.Name.StartOffset])) == "" {
			return in
		}
	}
	return "  "
}

// pointerEscape escapes a JSON pointer segment (RFC 6901).
func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// parsedServers is a parsed configuration file: the whole value, its
// top-level object, and the servers object (nil when the key is absent)
// with its index among the top-level members.
type parsedServers struct {
	v        hujson.Value
	top, srv *hujson.Object
	at       int
}
