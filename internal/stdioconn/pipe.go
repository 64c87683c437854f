package stdioconn

import (
	"context"
	"io"
	"net"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pipe returns the two ends of an in-process connection, each an
// mcp.Transport that connects once: what the go-sdk's
// mcp.NewInMemoryTransports is, read through a Conn (one reused line
// buffer, one decode per message) instead of the go-sdk's decoder, which
// allocates 32 KiB per message. Closing either end ends both.
func Pipe() (server, client mcp.Transport) {
	s, c := net.Pipe()
	return Over(s), Over(c)
}

// Over is a transport that connects once, to a Conn reading and writing
// rw (one end of a pipe or a socket); closing the connection closes rw.
func Over(rw io.ReadWriteCloser) mcp.Transport { return &over{rw} }

// over is the transport Over returns.
type over struct{ rw io.ReadWriteCloser }

// Connect implements mcp.Transport.
func (o *over) Connect(context.Context) (mcp.Connection, error) {
	return New(o.rw, o.rw, Options{}), nil
}
