package stdioconn

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command is the client side of the stdio transport, as the go-sdk's
// mcp.CommandTransport: it starts Cmd and speaks to it over its stdin and
// stdout, through a Conn. Closing the connection closes the server's
// stdin, waits TerminateDuration for it to exit, then sends SIGTERM,
// waits again, then SIGKILL — the shutdown the MCP specification asks of
// a stdio client.
type Command struct {
	Cmd *exec.Cmd
	// TerminateDuration is each wait of Close (0: 5 s, the go-sdk's).
	TerminateDuration time.Duration
	// MaxLine bounds one line from the server (0: DefaultMaxLine).
	MaxLine int
}

// Connect implements mcp.Transport: it starts the command.
func (t *Command) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.Cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.Cmd.Start(); err != nil {
		return nil, err
	}
	wait := t.TerminateDuration
	if wait <= 0 {
		wait = 5 * time.Second
	}
	cmd := t.Cmd
	stop := func() error {
		// The connection's input is the server's stdout, closed by
		// exec when the process is waited for; the end of the session
		// is the end of the server's stdin.
		if err := stdin.Close(); err != nil {
			return fmt.Errorf("closing stdin: %v", err)
		}
		return stopProcess(cmd, wait)
	}
	return New(nopCloser{stdout}, stdin, Options{MaxLine: t.MaxLine, OnClose: stop}), nil
}

// stopProcess waits for cmd to exit, then signals it (SIGTERM, then
// SIGKILL), waiting up to wait after each step.
func stopProcess(cmd *exec.Cmd, wait time.Duration) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(wait):
			return nil, false
		}
	}
	if err, ok := waitFor(); ok {
		return err
	}
	if cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := waitFor(); ok {
			return err
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := waitFor(); ok {
		return err
	}
	return fmt.Errorf("unresponsive subprocess")
}
