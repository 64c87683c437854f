package servetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchStart measures a session start as an MCP client sees it: it
// starts the command of newCmd once per iteration, and the time is to the
// answer of initialize. Besides it reports tools-listed-ms/op (to the
// answer of the tools/list that follows), the process's resident memory
// once initialize is answered (rss-KB, VmRSS) and at its peak (hwm-KB,
// VmHWM), and its CPU time once it exited (cpu-ns/op, its children's
// included once they were waited for).
func BenchStart(b *testing.B, newCmd func() *exec.Cmd) {
	var rss, hwm, cpu int64
	var listed time.Duration
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	for b.Loop() {
		cmd := newCmd()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			b.Fatalf("initialize: %v\n%s", err, stderr.String())
		}
		b.StopTimer()
		r, h := memoryKB(b, cmd.Process.Pid)
		rss, hwm = rss+r, hwm+h
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatalf("tools/list: %v\n%s", err, stderr.String())
		}
		listed += time.Since(start)
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
	b.ReportMetric(float64(listed.Microseconds())/1000/float64(n), "tools-listed-ms/op")
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
