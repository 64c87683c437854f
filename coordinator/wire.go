package coordinator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one line (one JSON-RPC message) from the client.
const MaxLine = 16 << 20

// NewStdioTransport is the MCP stdio transport of `oa coordinator serve`:
// the go-sdk's newline-delimited JSON-RPC over in and out, behind a filter
// that holds every line from the client to JSON-RPC 2.0 before the go-sdk
// reads it. The go-sdk ends the whole session on the first line it cannot
// decode; the filter instead answers such a line with the JSON-RPC error
// (-32700 parse error for a line that is not JSON, -32600 invalid request
// for JSON that is not one JSON-RPC 2.0 message: a batch, an id that is
// neither a string nor an integer, a version other than "2.0", a line
// longer than MaxLine) and skips it, so the session and any run in flight
// go on. The operator is told the error code, never the line.
func NewStdioTransport(in io.ReadCloser, out io.Writer, operator io.Writer) mcp.Transport {
	if operator == nil {
		operator = io.Discard
	}
	w := &lineWriter{w: out}
	f := &lineFilter{in: bufio.NewReaderSize(in, 64<<10), closer: in, out: w, operator: operator}
	// The filter bounds every line, so the go-sdk's own bound is off.
	return &mcp.IOTransport{Reader: f, Writer: w, MaxLineLength: -1}
}

// lineWriter serializes whole writes: the go-sdk writes each message in
// one Write, and so does the filter's error answer, so lines never mix.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves the underlying writer open (stdout is the process's).
func (l *lineWriter) Close() error { return nil }

// lineFilter is the reader the go-sdk decodes: only well-formed JSON-RPC
// 2.0 lines pass.
type lineFilter struct {
	in       *bufio.Reader
	closer   io.Closer
	out      io.Writer
	operator io.Writer

	line    []byte // the line being read (reused)
	pending []byte // the rest of a passed line not yet read
}

// Read implements io.Reader.
func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, tooLong, err := f.next()
		if err != nil {
			return 0, err
		}
		f.pending = f.admit(line, tooLong)
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// Close closes the input.
func (f *lineFilter) Close() error { return f.closer.Close() }

// next reads one line, without keeping more than MaxLine bytes of it;
// tooLong reports that it was longer. A last line without a newline is a
// line.
func (f *lineFilter) next() (line []byte, tooLong bool, err error) {
	f.line = f.line[:0]
	for {
		chunk, err := f.in.ReadSlice('\n')
		if len(f.line)+len(chunk) > MaxLine {
			tooLong = true
		} else if !tooLong {
			f.line = append(f.line, chunk...)
		}
		switch {
		case err == nil:
			return f.line, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(f.line) > 0 || tooLong):
			return f.line, tooLong, nil
		default:
			return nil, false, err
		}
	}
}

// admit returns the line to pass on (with its newline), or nil when the
// line is blank or was answered with an error.
func (f *lineFilter) admit(line []byte, tooLong bool) []byte {
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 && !tooLong {
		return nil
	}
	code, id := int64(jsonrpc.CodeInvalidRequest), json.RawMessage(nil)
	if !tooLong {
		if code, id = CheckMessage(msg); code == 0 {
			return append(append(make([]byte, 0, len(msg)+1), msg...), '\n')
		}
	}
	f.refuse(code, id)
	return nil
}

// refuse writes the JSON-RPC error answer of a refused line.
func (f *lineFilter) refuse(code int64, id json.RawMessage) {
	if id == nil {
		id = json.RawMessage("null")
	}
	message := "Invalid Request"
	if code == jsonrpc.CodeParseError {
		message = "Parse error"
	}
	answer, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		panic("coordinator: a JSON-RPC error answer is always encodable: " + err.Error())
	}
	fmt.Fprintf(f.operator, "oa coordinator: refused a line from the client: %s (%d)\n", message, code)
	_, _ = f.out.Write(append(answer, '\n'))
}

// maxSafeID is the largest integer id that survives the go-sdk's float64
// decoding of ids exactly.
const maxSafeID = 1 << 53

// CheckMessage holds one line from the client to JSON-RPC 2.0 as the
// go-sdk decodes it: code 0 when it may pass, else -32700 (not JSON) or
// -32600 (not one JSON-RPC 2.0 message), with the id to answer with (nil
// when the line has none that can be echoed).
func CheckMessage(msg []byte) (code int64, id json.RawMessage) {
	if !json.Valid(msg) {
		return jsonrpc.CodeParseError, nil
	}
	var fields map[string]json.RawMessage // exact keys, as the go-sdk matches them
	if msg[0] != '{' || json.Unmarshal(msg, &fields) != nil {
		return jsonrpc.CodeInvalidRequest, nil // a batch, or not an object
	}
	if raw, ok := fields["id"]; ok && string(raw) != "null" {
		if !validID(raw) {
			return jsonrpc.CodeInvalidRequest, nil
		}
		id = raw
	}
	var version string
	if json.Unmarshal(fields["jsonrpc"], &version) != nil || version != "2.0" {
		return jsonrpc.CodeInvalidRequest, id
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return jsonrpc.CodeInvalidRequest, id
	}
	return 0, nil
}

// validID reports whether raw is a string or an integer the go-sdk keeps
// exactly.
func validID(raw json.RawMessage) bool {
	var s string
	if raw[0] == '"' {
		return json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n <= maxSafeID && n >= -maxSafeID
}
