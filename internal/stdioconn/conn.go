// Package stdioconn is an MCP connection (the go-sdk's mcp.Connection) of
// newline-delimited JSON-RPC 2.0 over a reader and a writer: the stdio
// transport of the MCP specification, one message per line.
//
// It exists for speed, and is a supported use of the go-sdk, which lets a
// program bring its own Transport and Connection. The go-sdk's own stdio
// connection decodes every message twice, each time through a decoder that
// allocates a fresh 32 KiB buffer; this one reads each line into one
// buffer reused for the whole session and decodes it once, with exact
// (case-sensitive) key matching as the go-sdk does. Lines longer than the
// bound are an error that ends the connection, as in the go-sdk; a caller
// that wants to answer and skip bad lines instead reads with a Filter.
package stdioconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultMaxLine is the bound of one line when Options.MaxLine is zero:
// the go-sdk's own default.
const DefaultMaxLine = 16 << 20

// ErrLineTooLong is the read error of a line longer than the bound, when
// no Filter skips it.
var ErrLineTooLong = errors.New("stdioconn: a line longer than the bound")

// Options configures a Conn.
type Options struct {
	// MaxLine bounds one line in bytes (0: DefaultMaxLine).
	MaxLine int
	// Filter, when set, sees every non-blank line (without its newline)
	// before it is handed to the go-sdk, and the decoded message or the
	// decoding error; tooLong says the line was longer than MaxLine (the
	// line is then cut). It returns the message to hand on, or nil to
	// skip the line (having answered it, say, with Conn.WriteLine).
	// Without a Filter a line that does not decode ends the connection.
	Filter func(line []byte, tooLong bool, msg jsonrpc.Message, err error) jsonrpc.Message
	// OnClose runs once when the connection is closed (after the reader
	// is closed); its error is Close's. The default closes nothing more.
	OnClose func() error
}

// Conn is an mcp.Connection over newline-delimited JSON-RPC.
type Conn struct {
	in      io.Closer
	writeMu sync.Mutex
	out     io.Writer
	onClose func() error

	incoming chan readResult
	closed   chan struct{}
	once     sync.Once
	closeErr error
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// New returns a connection that reads messages from in, one per line,
// and writes them to out, one per line. Reading starts at once, in its
// own goroutine, so that Close can end a Read blocked on in (closing in
// is what unblocks the goroutine itself).
func New(in io.ReadCloser, out io.Writer, opts Options) *Conn {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	c := &Conn{in: in, out: out, onClose: opts.OnClose, incoming: make(chan readResult), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(in, 64<<10), opts)
	return c
}

// readLoop reads, filters and decodes lines until the input ends or the
// connection is closed.
func (c *Conn) readLoop(in *bufio.Reader, opts Options) {
	var buf []byte // one line, reused for the session
	for {
		line, tooLong, err := readLine(in, buf[:0], opts.MaxLine)
		buf = line[:0]
		var msg jsonrpc.Message
		if err == nil {
			msg, err = c.admit(line, tooLong, opts.Filter)
			if msg == nil && err == nil {
				continue
			}
		}
		select {
		case c.incoming <- readResult{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// admit decodes one line and passes it through the filter: nil, nil
// means skip it.
func (c *Conn) admit(line []byte, tooLong bool, filter func([]byte, bool, jsonrpc.Message, error) jsonrpc.Message) (jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 && !tooLong {
		return nil, nil
	}
	var msg jsonrpc.Message
	var err error
	if tooLong {
		err = ErrLineTooLong
	} else {
		msg, err = Decode(line)
	}
	if filter == nil {
		return msg, err
	}
	return filter(line, tooLong, msg, err), nil
}

// readLine appends the next line of in to buf, without keeping more than
// max bytes of it; tooLong reports that it was longer. A last line
// without a newline is a line; io.EOF comes only when nothing is left.
func readLine(in *bufio.Reader, buf []byte, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := in.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			tooLong = true
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			return buf, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong):
			return buf, tooLong, nil
		default:
			return buf, false, err
		}
	}
}

// Read implements mcp.Connection: the next message, or the error that
// ended the input.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

// Write implements mcp.Connection: msg on one line, in one write.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.WriteLine(data)
}

// WriteLine writes data and a newline in one write, never interleaved
// with another message.
func (c *Conn) WriteLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection; it may be called more than once, and
// concurrently with Read.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.closeErr = c.in.Close()
		if c.onClose != nil {
			c.closeErr = errors.Join(c.closeErr, c.onClose())
		}
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio has none.
func (c *Conn) SessionID() string { return "" }

// wireKeys are the members of a JSON-RPC 2.0 message, matched exactly.
type wireKeys map[string]json.RawMessage

// errNotMessage is the decoding error of a line that is JSON but not one
// JSON-RPC 2.0 message.
var errNotMessage = errors.New("stdioconn: not a JSON-RPC 2.0 message")

// Decode decodes one JSON-RPC 2.0 message as the go-sdk's
// jsonrpc.DecodeMessage does (exact member names, "jsonrpc":"2.0", a
// request when "method" is present, else a response with a valid id),
// without its per-call 32 KiB decoder. The message shares no memory
// with line.
func Decode(line []byte) (jsonrpc.Message, error) {
	var m wireKeys
	if json.Unmarshal(line, &m) != nil {
		return nil, errNotMessage
	}
	var version string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, errNotMessage
	}
	id, err := decodeID(m["id"])
	if err != nil {
		return nil, err
	}
	if raw, ok := m["method"]; ok {
		var method string
		if json.Unmarshal(raw, &method) != nil {
			return nil, errNotMessage
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: nonNull(m["params"])}, nil
	}
	if !id.IsValid() {
		return nil, errNotMessage
	}
	resp := &jsonrpc.Response{ID: id, Result: nonNull(m["result"])}
	if raw, ok := m["error"]; ok && string(raw) != "null" {
		var we jsonrpc.Error
		if err := decodeError(raw, &we); err != nil {
			return nil, err
		}
		resp.Error = &we
	}
	return resp, nil
}

// nonNull is raw, or nil for an absent member (the go-sdk's omitempty).
func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// decodeID decodes an id member as the go-sdk does: absent or null is no
// id, a number or a string is an id, anything else is refused.
func decodeID(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return jsonrpc.ID{}, errNotMessage
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return jsonrpc.ID{}, errNotMessage
	}
	return id, nil
}

// decodeError decodes an error member with exact member names.
func decodeError(raw json.RawMessage, we *jsonrpc.Error) error {
	var m wireKeys
	if json.Unmarshal(raw, &m) != nil {
		return errNotMessage
	}
	if c, ok := m["code"]; ok && json.Unmarshal(c, &we.Code) != nil {
		return errNotMessage
	}
	if s, ok := m["message"]; ok && json.Unmarshal(s, &we.Message) != nil {
		return errNotMessage
	}
	we.Data = nonNull(m["data"])
	return nil
}

// nopCloser is a reader whose Close does nothing (the process's stdout
// is closed by exec once the process is waited for).
type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }
