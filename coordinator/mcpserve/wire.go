package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/internal/stdioconn"
)

// MaxLine bounds one line (one JSON-RPC message) from the client.
const MaxLine = 16 << 20

// NewStdioTransport is the MCP stdio transport of `oa coordinator serve`:
// newline-delimited JSON-RPC over in and out (internal/stdioconn: each
// line read into one reused buffer and decoded once), behind a filter
// that holds every line from the client to JSON-RPC 2.0 before the go-sdk
// sees it, and a guard on every error answer going out.
//
// The go-sdk ends the whole session on the first line it cannot decode;
// the filter instead answers such a line with the JSON-RPC error (-32700
// parse error for a line that is not JSON, -32600 invalid request for
// JSON that is not one JSON-RPC 2.0 message: a batch, an id that is
// neither a string nor an integer, a version other than "2.0", a line
// longer than MaxLine) and skips it, so the session and any run in flight
// go on. The operator is told the error code, never the line.
//
// The go-sdk words its own error answers (unknown method, malformed
// params, a failed initialize) from the request, echoing what the client
// sent; every error answer is rewritten on its way out to fixed copy
// under a standard JSON-RPC code (see FixedError).
func NewStdioTransport(in io.ReadCloser, out io.Writer, operator io.Writer) mcp.Transport {
	if operator == nil {
		operator = io.Discard
	}
	return &stdioTransport{in: in, out: out, operator: operator}
}

type stdioTransport struct {
	in       io.ReadCloser
	out      io.Writer
	operator io.Writer
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{operator: t.operator, made: make(chan struct{})}
	c.Conn = stdioconn.New(t.in, t.out, stdioconn.Options{MaxLine: MaxLine, Filter: c.filter})
	close(c.made)
	return c, nil
}

// stdioConn is the coordinator's side of one stdio session.
type stdioConn struct {
	*stdioconn.Conn
	operator io.Writer
	// made is closed once Conn is set: the filter runs on the reading
	// goroutine stdioconn.New starts, and may refuse the first line
	// before New has returned.
	made chan struct{}
	// initializing holds the ids of initialize requests not yet
	// answered: the go-sdk answers their failures without a code.
	initializing sync.Map
}

// filter passes a line that is one JSON-RPC 2.0 message as the go-sdk
// decodes it, and answers any other (returning nil).
func (c *stdioConn) filter(line []byte, tooLong bool, msg jsonrpc.Message, decodeErr error) jsonrpc.Message {
	code, id := int64(jsonrpc.CodeInvalidRequest), json.RawMessage(nil)
	if !tooLong {
		if code, id = checkMessage(line, decodeErr); code == 0 {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() {
				c.initializing.Store(req.ID, true)
			}
			return msg
		}
	}
	c.refuse(code, id)
	return nil
}

// refuse writes the JSON-RPC error answer of a refused line.
func (c *stdioConn) refuse(code int64, id json.RawMessage) {
	if id == nil {
		id = json.RawMessage("null")
	}
	fixed := FixedError(code, "")
	answer, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, fixed})
	if err != nil {
		panic("coordinator: a JSON-RPC error answer is always encodable: " + err.Error())
	}
	fmt.Fprintf(c.operator, "oa coordinator: refused a line from the client: %s (%d)\n", fixed.Message, code)
	<-c.made
	_ = c.WriteLine(answer)
}

// Write implements mcp.Connection: every error answer leaves as fixed
// copy (FixedError); everything else as the go-sdk wrote it.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Conn.Write(ctx, msg)
	}
	_, initialize := c.initializing.LoadAndDelete(resp.ID)
	if resp.Error != nil {
		var we *jsonrpc.Error
		code, message := int64(0), ""
		if errors.As(resp.Error, &we) {
			code, message = we.Code, we.Message
		}
		if initialize && code == 0 {
			code = jsonrpc.CodeInvalidParams // the go-sdk's uncoded failure to accept initialize's params
		}
		msg = &jsonrpc.Response{ID: resp.ID, Error: FixedError(code, message)}
	}
	return c.Conn.Write(ctx, msg)
}

// standardErrors is the fixed copy of each standard JSON-RPC 2.0 error
// code: the only codes and words an error answer of the coordinator
// carries.
var standardErrors = map[int64]string{
	jsonrpc.CodeParseError:     "Parse error",
	jsonrpc.CodeInvalidRequest: "Invalid Request",
	jsonrpc.CodeMethodNotFound: "Method not found",
	jsonrpc.CodeInvalidParams:  "Invalid params",
	jsonrpc.CodeInternalError:  "Internal error",
}

// ownErrors is the copy the coordinator's own handlers word (fixed text,
// never built from a request); it passes as written under its code.
var ownErrors = map[int64][]string{
	jsonrpc.CodeInvalidParams: {invalidToolCall},
	jsonrpc.CodeInternalError: {callNotServed},
}

// FixedError is the error answer the client receives for an error of
// code and message: the coordinator's own fixed copy passes as it is;
// any other message (the go-sdk's, which quotes the request) becomes the
// standard copy of its code; a code outside the standard five (the
// go-sdk answers with 0 a handler's plain error) becomes -32603
// Internal error (an initialize refused with 0 is -32602, see Write).
// No data member ever leaves.
func FixedError(code int64, message string) *jsonrpc.Error {
	if slices.Contains(ownErrors[code], message) {
		return &jsonrpc.Error{Code: code, Message: message}
	}
	if std, ok := standardErrors[code]; ok {
		return &jsonrpc.Error{Code: code, Message: std}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: standardErrors[jsonrpc.CodeInternalError]}
}

// maxSafeID is the largest integer id that survives the go-sdk's float64
// decoding of ids exactly.
const maxSafeID = 1 << 53

// CheckMessage holds one line from the client to JSON-RPC 2.0 as the
// go-sdk decodes it: code 0 when it may pass, else -32700 (not JSON) or
// -32600 (not one JSON-RPC 2.0 message), with the id to answer with (nil
// when the line has none that can be echoed).
func CheckMessage(msg []byte) (code int64, id json.RawMessage) {
	_, err := stdioconn.Decode(msg)
	return checkMessage(msg, err)
}

// checkMessage is CheckMessage given the result of decoding msg.
func checkMessage(msg []byte, decodeErr error) (code int64, id json.RawMessage) {
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
	if decodeErr != nil {
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
