// Package sandbox is oa's built-in sandbox records connector: an
// in-process MCP server (go-sdk) with two tools over a few records, and
// scripted failure cases chosen by a record reference's two-letter prefix,
// so every outcome a coordinator must handle can be produced on purpose.
//
// References match ^[A-Z]{2}-[0-9]{4}$. Seeded records: AB-1234 and
// CD-5678 (open) and CL-0001 (closed). Every reference with one of these
// prefixes exists and is open, and scripts append_note:
//
//   - DU-xxxx: the append answers a duplicate (tool error {"error":"duplicate"}); nothing is written.
//   - FS-xxxx: the append answers saved:true but writes nothing (a false "saved").
//   - TO-xxxx: the append writes the note, then never answers until the caller's context ends.
//   - OF-xxxx: every call fails with {"error":"offline"} before anything is written.
//
// Any other reference is a tool error {"error":"not_found"}; an append to a
// closed record is a tool error {"error":"closed"} and writes nothing.
//
// State lives in records.json in a folder (written atomically under a file
// lock, so separate processes see each other's writes), or in memory.
package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names.
const (
	ReadRecord = "read_record"
	AppendNote = "append_note"
)

// Record statuses.
const (
	StatusOpen   = "open"
	StatusClosed = "closed"
)

// Tool error codes, the "error" member of a tool error's structured content.
const (
	ErrNotFound  = "not_found"
	ErrDuplicate = "duplicate"
	ErrOffline   = "offline"
	ErrClosed    = "closed"
	ErrInvalid   = "invalid_arguments"
)

// Note is one note on a record.
type Note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Record is a record as read_record returns it.
type Record struct {
	Record string `json:"record"`
	Status string `json:"status"`
	Notes  []Note `json:"notes"`
}

// refPattern is the shape of a record reference.
var refPattern = regexp.MustCompile(`^[A-Z]{2}-[0-9]{4}$`)

const refSchema = `{"type":"string","pattern":"^[A-Z]{2}-[0-9]{4}$","description":"record reference, two capital letters, a hyphen and four digits"}`

// Exact schemas. They are written out rather than inferred from Go types so
// they stay byte-stable across go-sdk versions (their digests are pinned in
// execution plans).
const (
	readInput = `{"type":"object","properties":{"record":` + refSchema + `},"required":["record"],"additionalProperties":false}`

	readOutput = `{"type":"object","properties":{` +
		`"record":{"type":"string"},` +
		`"status":{"type":"string","enum":["open","closed"]},` +
		`"notes":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"text":{"type":"string"}},"required":["id","text"],"additionalProperties":false}}` +
		`},"required":["record","status","notes"],"additionalProperties":false}`

	appendInput = `{"type":"object","properties":{"record":` + refSchema + `,` +
		`"text":{"type":"string","minLength":1,"maxLength":4000,"description":"the note's text"}` +
		`},"required":["record","text"],"additionalProperties":false}`

	appendOutput = `{"type":"object","properties":{"saved":{"type":"boolean"},"note_id":{"type":"string"}},"required":["saved","note_id"],"additionalProperties":false}`
)

// NewServer returns the sandbox MCP server. dir is the state folder; ""
// keeps the state in memory for this server only.
func NewServer(dir string) *mcp.Server {
	st := newStore(dir)
	s := mcp.NewServer(&mcp.Implementation{Name: "oa-sandbox-records", Version: "v1"}, nil)
	no := false
	s.AddTool(&mcp.Tool{
		Name:         ReadRecord,
		Description:  "Read one record: its status and all its notes. Reads only.",
		InputSchema:  json.RawMessage(readInput),
		OutputSchema: json.RawMessage(readOutput),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}, handler(readInput, func(ctx context.Context, in args) result { return readRecord(st, in) }))
	s.AddTool(&mcp.Tool{
		Name:         AppendNote,
		Description:  "Append a note to an open record. Adds only; calling twice adds two notes.",
		InputSchema:  json.RawMessage(appendInput),
		OutputSchema: json.RawMessage(appendOutput),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, IdempotentHint: false, DestructiveHint: &no, OpenWorldHint: &no},
	}, handler(appendInput, func(ctx context.Context, in args) result { return appendNote(ctx, st, in) }))
	return s
}

// args are the arguments of either tool.
type args struct {
	Record string `json:"record"`
	Text   string `json:"text"`
}

// result is a handler's answer: structured content, or a tool error code.
type result struct {
	out     any
	errCode string
}

// handler checks the arguments against the input schema and wraps fn's
// answer in a CallToolResult with structured content.
func handler(inputSchema string, fn func(context.Context, args) result) mcp.ToolHandler {
	var sch jsonschema.Schema
	if err := json.Unmarshal([]byte(inputSchema), &sch); err != nil {
		panic(err)
	}
	rs, err := sch.Resolve(nil)
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var raw any
		var in args
		if json.Unmarshal(req.Params.Arguments, &raw) != nil || rs.Validate(raw) != nil ||
			json.Unmarshal(req.Params.Arguments, &in) != nil {
			return toolError(ErrInvalid), nil
		}
		r := fn(ctx, in)
		if r.errCode != "" {
			return toolError(r.errCode), nil
		}
		if r.out == nil { // the caller's context ended first
			return nil, ctx.Err()
		}
		return answer(r.out), nil
	}
}

// answer is a successful result, structured and as JSON text.
func answer(out any) *mcp.CallToolResult {
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}
}

// toolError is a tool error with structured {"error": code}.
func toolError(code string) *mcp.CallToolResult {
	r := answer(map[string]string{"error": code})
	r.IsError = true
	return r
}

// readRecord answers read_record.
func readRecord(st *store, in args) result {
	if prefix(in.Record) == "OF" {
		return result{errCode: ErrOffline}
	}
	var out Record
	var found bool
	err := st.view(func(s *state) { out, found = s.read(in.Record) })
	switch {
	case err != nil:
		return result{errCode: ErrOffline}
	case !found:
		return result{errCode: ErrNotFound}
	}
	return result{out: out}
}

// appendNote answers append_note, following the prefix scripts.
func appendNote(ctx context.Context, st *store, in args) result {
	p := prefix(in.Record)
	if p == "OF" {
		return result{errCode: ErrOffline}
	}
	if p == "DU" {
		return result{errCode: ErrDuplicate}
	}
	var id, code string
	err := st.update(func(s *state) bool {
		rec, found := s.read(in.Record)
		switch {
		case !found:
			code = ErrNotFound
			return false
		case rec.Status != StatusOpen:
			code = ErrClosed
			return false
		}
		id = noteID(in.Record, len(rec.Notes)+1)
		if p == "FS" { // says saved, writes nothing
			return false
		}
		s.add(in.Record, Note{ID: id, Text: in.Text})
		return true
	})
	if err != nil {
		return result{errCode: ErrOffline}
	}
	if code != "" {
		return result{errCode: code}
	}
	if p == "TO" { // saved, but the answer never comes
		<-ctx.Done()
		return result{}
	}
	return result{out: map[string]any{"saved": true, "note_id": id}}
}

// noteID is the id of a record's n-th note.
func noteID(record string, n int) string { return fmt.Sprintf("%s-N%d", record, n) }

// prefix returns the two-letter prefix of a valid reference, else "".
func prefix(ref string) string {
	if !refPattern.MatchString(ref) {
		return ""
	}
	return ref[:2]
}

// Dir is where the sandbox keeps its records under a host folder
// ($OA_HOME): the CLI, the coordinator and the demo all use this one.
func Dir(home string) string { return filepath.Join(home, "sandbox") }
