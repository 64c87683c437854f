package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

// tomlFormat is a TOML file whose servers are tables [table.NAME] (Codex's
// config.toml: [mcp_servers.NAME]). No Go TOML library round-trips
// comments and layout, so the edit is made at table level on the text:
// go-toml's parser finds the byte span of the [table.NAME] table and its
// sub-tables, that span alone is replaced, appended or removed, and the
// result is decoded again and compared with the original — every key but
// the entry must decode the same — before it is returned. Every other
// byte, comments included, is kept as it was.
type tomlFormat struct {
	table string
}

// tomlEntry is the entry as written: env as an inline table, so the
// entry is one table.
type tomlEntry struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env,inline"`
	// ToolTimeoutSec is how long Codex waits for one tool call (its
	// default is 60 s).
	ToolTimeoutSec int `toml:"tool_timeout_sec"`
}

// toolTimeoutSec is the tool_timeout_sec written: a run_workflow or
// get_run waiting its longest wait_seconds, and a minute for the step
// to answer after it, is not cut at Codex's default of 60 s.
const toolTimeoutSec = contract.WaitSecondsMax + 60

// span is a byte range [from, to) of a file.
type span struct{ from, to int }

// decodeTOML decodes b, refusing it with its line when it does not parse.
func decodeTOML(file string, b []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := toml.Unmarshal(b, &m); err != nil {
		var de *toml.DecodeError
		line, col := 1, 1
		if errors.As(err, &de) {
			line, col = de.Position()
		}
		return nil, unparsable(file, line, col, "TOML")
	}
	return m, nil
}

// entrySpans returns the spans of the [table.name] table and its
// sub-tables: from the start of each header line to the end of the line
// of its last key (comments after it belong to what follows). An entry
// given in another form (dotted keys, an inline table, an array of
// tables) is refused: oa edits only the table form it writes.
func (f tomlFormat) entrySpans(file string, b []byte, name string) ([]span, error) {
	entry := []string{f.table, name}
	var p unstable.Parser
	p.Reset(b)
	var table []string
	open := -1
	var spans []span
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			key, at := tomlKey(e.Key())
			table, open = key, -1
			if !hasPrefix(key, entry) && !slices.Equal(key, entry[:1]) {
				continue
			}
			if e.Kind == unstable.ArrayTable {
				return nil, refuseAt(file, b, at, "%s is an array of tables; oa edits only [%s.NAME] tables", f.table, f.table)
			}
			if hasPrefix(key, entry) {
				spans = append(spans, span{lineStart(b, at), lineEnd(b, at)})
				open = len(spans) - 1
			}
		case unstable.KeyValue:
			key, at := tomlKey(e.Key())
			full := append(slices.Clone(table), key...)
			if open < 0 && (hasPrefix(full, entry) || slices.Equal(full, entry[:1])) {
				return nil, refuseAt(file, b, at, "%s is written with dotted keys or an inline table; write it as [%s.NAME] tables, then run oa harness install again", f.table, f.table)
			}
			if open >= 0 {
				spans[open].to = lineEnd(b, int(e.Raw.Offset+e.Raw.Length))
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, refuseAt(file, b, 0, "the file is not TOML")
	}
	return spans, nil
}

// tomlKey is a key's parts and the offset where it starts.
func tomlKey(it unstable.Iterator) ([]string, int) {
	var key []string
	at := -1
	for it.Next() {
		n := it.Node()
		if at < 0 {
			at = int(n.Raw.Offset)
		}
		key = append(key, string(n.Data))
	}
	return key, at
}

func hasPrefix(key, prefix []string) bool {
	return len(key) >= len(prefix) && slices.Equal(key[:len(prefix)], prefix)
}

func lineStart(b []byte, n int) int { return bytes.LastIndexByte(b[:n], '\n') + 1 }

func lineEnd(b []byte, n int) int {
	if i := bytes.IndexByte(b[n:], '\n'); i >= 0 {
		return n + i + 1
	}
	return len(b)
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// render is the entry as a [table.name] table.
func (f tomlFormat) render(name string, e ServerEntry) []byte {
	key := name
	if !bareKey.MatchString(key) {
		q, _ := marshal(name, "")
		key = string(q)
	}
	args := e.Args
	if args == nil {
		args = []string{}
	}
	body, err := toml.Marshal(tomlEntry{Command: e.Command, Args: args, Env: e.Env, ToolTimeoutSec: toolTimeoutSec})
	if err != nil {
		panic("harness: encoding a TOML entry: " + err.Error())
	}
	return append([]byte("["+f.table+"."+key+"]\n"), body...)
}

func (f tomlFormat) fresh(name string, e ServerEntry) []byte { return f.render(name, e) }

func (f tomlFormat) get(file string, b []byte, name string) (*ServerEntry, error) {
	m, err := decodeTOML(file, b)
	if err != nil {
		return nil, err
	}
	srv, _ := m[f.table].(map[string]any)
	raw, ok := srv[name]
	if !ok {
		return nil, nil
	}
	// Decode through JSON into the entry's shape: a value of another type
	// fails here.
	j, err := json.Marshal(raw)
	var e ServerEntry
	if err != nil || json.Unmarshal(j, &e) != nil {
		return nil, blocking.New(blocking.HarnessServerEntryChanged, "the %s entry is not a command entry", name)
	}
	return &e, nil
}

func (f tomlFormat) put(file string, b []byte, name string, e ServerEntry) ([]byte, bool, error) {
	old, err := decodeTOML(file, b)
	if err != nil {
		return nil, false, err
	}
	spans, err := f.entrySpans(file, b, name)
	if err != nil {
		return nil, false, err
	}
	text := f.render(name, e)
	var out []byte
	if len(spans) == 0 {
		out = slices.Clone(b)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		if len(bytes.TrimSpace(out)) > 0 {
			out = append(out, '\n')
		}
		out = append(out, text...)
	} else {
		out = cut(b, spans[1:])
		out = splice(out, spans[0].from, spans[0].to, text)
	}
	if err := f.checkEdit(file, old, out, name, &e); err != nil {
		return nil, false, err
	}
	return out, false, nil
}

// gap is the newlines put adds before an entry it appends to b: one to
// end a last line left unended, one for a blank line before the table.
func (f tomlFormat) gap(file string, b []byte, name string) *string {
	if spans, err := f.entrySpans(file, b, name); err != nil || len(spans) > 0 {
		return nil
	}
	sep := ""
	if len(b) > 0 && b[len(b)-1] != '\n' {
		sep += "\n"
	}
	if len(bytes.TrimSpace(b)) > 0 {
		sep += "\n"
	}
	return &sep
}

func (f tomlFormat) remove(file string, b []byte, name string, _ bool, gap *string) ([]byte, bool, error) {
	old, err := decodeTOML(file, b)
	if err != nil {
		return nil, false, err
	}
	spans, err := f.entrySpans(file, b, name)
	if err != nil || len(spans) == 0 {
		return b, false, err
	}
	// The newlines put before an appended entry go with it: those gap
	// says it added, or (a record without gap) one blank line.
	last := spans[len(spans)-1]
	switch from := spans[0].from; {
	case last.to != len(b):
	case gap != nil:
		if from >= len(*gap) && string(b[from-len(*gap):from]) == *gap {
			spans[0].from -= len(*gap)
		}
	case from >= 2 && string(b[from-2:from]) == "\n\n":
		spans[0].from--
	}
	out := cut(b, spans)
	if err := f.checkEdit(file, old, out, name, nil); err != nil {
		return nil, false, err
	}
	return out, len(bytes.TrimSpace(out)) == 0, nil
}

// cut returns b without the spans, which are in file order.
func cut(b []byte, spans []span) []byte {
	out := slices.Clone(b)
	for i := len(spans) - 1; i >= 0; i-- {
		out = slices.Delete(out, spans[i].from, spans[i].to)
	}
	return out
}

// checkEdit decodes the edited file and compares it with old: the same
// document but for the entry, which is want (or absent when want is nil).
func (f tomlFormat) checkEdit(file string, old map[string]any, after []byte, name string, want *ServerEntry) error {
	edited := map[string]any{}
	if err := toml.Unmarshal(after, &edited); err != nil {
		return refuseAt(file, after, 0, "the file cannot be edited at table level without breaking it")
	}
	srv, _ := edited[f.table].(map[string]any)
	if want != nil {
		got, err := f.get(file, after, name)
		if err != nil || got == nil || got.Command != want.Command || !slices.Equal(got.Args, want.Args) || !reflect.DeepEqual(got.Env, want.Env) {
			return errors.New("harness: the edited configuration does not hold the entry")
		}
	} else if _, ok := srv[name]; ok {
		return errors.New("harness: the edited configuration still holds the entry")
	}
	delete(srv, name)
	if len(srv) == 0 {
		delete(edited, f.table)
	}
	o, _ := old[f.table].(map[string]any)
	delete(o, name)
	if o != nil && len(o) == 0 {
		delete(old, f.table)
	}
	if !reflect.DeepEqual(old, edited) {
		return refuseAt(file, after, 0, "the file cannot be edited at table level without changing other content")
	}
	return nil
}
