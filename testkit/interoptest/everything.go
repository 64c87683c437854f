package interoptest

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EverythingServer is a running server-everything in streamableHttp mode.
type EverythingServer struct {
	// URL is its MCP endpoint on loopback.
	URL string
	cmd *exec.Cmd
}

// StartEverything starts the pinned server-everything in streamableHttp
// mode on a free loopback port, waits until it accepts connections and
// stops it when the test ends.
func StartEverything(t testing.TB) *EverythingServer {
	t.Helper()
	bin := Everything(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &EverythingServer{URL: "http://" + addr + "/mcp", cmd: cmd}
	t.Cleanup(e.Stop)
	// Readiness, not timing: poll until it listens (at most a minute,
	// node starting on a loaded machine).
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return e
		}
		if i == 1200 {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the server's process group and waits for it.
func (e *EverythingServer) Stop() {
	if e.cmd.Process == nil || e.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	_ = e.cmd.Wait()
}
