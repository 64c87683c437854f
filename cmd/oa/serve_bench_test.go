package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/internal/testkit/connectortest"
)

// BenchmarkSessionStart measures a session start as an MCP client sees it:
// from starting the process to the answer of initialize, for
// `oa coordinator serve --deployment clinic` on a quickstart host and,
// side by side in one run, for the go-sdk test server started directly.
// Besides ns/op it reports the process's CPU time per start (cpu-ns/op),
// and its resident memory once initialize is answered (rss-KB, VmRSS) and
// at its peak (hwm-KB, VmHWM), both read from /proc/PID/status; and, as
// the floor of any oa process, `oa version` from start to exit.
func BenchmarkSessionStart(b *testing.B) {
	home := b.TempDir()
	if _, err := demo.Prepare(context.Background(), home, io.Discard); err != nil {
		b.Fatal(err)
	}
	tools := connectortest.WriteTools(b, b.TempDir(), []connectortest.ToolSpec{{Name: "read_record", Description: "Read a record."}, {Name: "append_note", Description: "Append a note."}})
	oa := oaBinary(b)
	b.Run("coordinator", func(b *testing.B) {
		benchStart(b, func() *exec.Cmd {
			cmd := exec.Command(oa, "coordinator", "serve", "--deployment", demo.Deployment)
			cmd.Env = append(os.Environ(), "OA_HOME="+home)
			return cmd
		})
	})
	b.Run("downstream", func(b *testing.B) {
		server := connectortest.Server(b)
		benchStart(b, func() *exec.Cmd { return exec.Command(server, "--tools", tools) })
	})
	// The floor of any oa command: the same binary started, its packages
	// initialized, `oa version` printed and the process gone. Session
	// start cannot cost less than this.
	b.Run("oa-version", func(b *testing.B) {
		var cpu int64
		for b.Loop() {
			cmd := exec.Command(oa, "version")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("oa version: %v\n%s", err, out)
			}
			cpu += int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
		}
		b.ReportMetric(float64(cpu/int64(b.N)), "cpu-ns/op")
	})
}

// benchStart starts the command of newCmd once per iteration and runs the
// MCP initialize handshake with it; memory is read after the handshake and
// CPU time once the process has exited.
func benchStart(b *testing.B, newCmd func() *exec.Cmd) {
	var rss, hwm, cpu int64
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	for b.Loop() {
		cmd := newCmd()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			b.Fatalf("initialize: %v\n%s", err, stderr.String())
		}
		b.StopTimer()
		r, h := memoryKB(b, cmd.Process.Pid)
		rss, hwm = rss+r, hwm+h
		_ = cs.Close()
		cancel()
		if cmd.ProcessState != nil {
			cpu += int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
		}
		b.StartTimer()
	}
	n := int64(b.N)
	b.ReportMetric(float64(rss/n), "rss-KB")
	b.ReportMetric(float64(hwm/n), "hwm-KB")
	b.ReportMetric(float64(cpu/n), "cpu-ns/op")
}

// memoryKB reads VmRSS and VmHWM (kB) of pid from /proc/PID/status.
func memoryKB(b *testing.B, pid int) (rss, hwm int64) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch {
		case err != nil:
		case name == "VmRSS":
			rss = kb
		case name == "VmHWM":
			hwm = kb
		}
	}
	if rss == 0 || hwm == 0 {
		b.Fatalf("no VmRSS/VmHWM for pid %d", pid)
	}
	return rss, hwm
}
