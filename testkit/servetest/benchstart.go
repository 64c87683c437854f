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
// once initialize is answered (rss-KB, VmRSS; of it anon-KB, its heap and
// stacks, and file-KB, pages of its binary and other files) and at its
// peak (hwm-KB, VmHWM), and its CPU time once it exited (cpu-ns/op, its
// children's included once they were waited for).
func BenchStart(b *testing.B, newCmd func() *exec.Cmd) {
	var rss, anon, file, hwm, cpu int64
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
		m := memoryKB(b, cmd.Process.Pid)
		rss, anon, file, hwm = rss+m["VmRSS"], anon+m["RssAnon"], file+m["RssFile"], hwm+m["VmHWM"]
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
	b.ReportMetric(float64(anon/n), "anon-KB")
	b.ReportMetric(float64(file/n), "file-KB")
	b.ReportMetric(float64(hwm/n), "hwm-KB")
	b.ReportMetric(float64(cpu/n), "cpu-ns/op")
	b.ReportMetric(float64(listed.Microseconds())/1000/float64(n), "tools-listed-ms/op")
}

// memoryKB reads the resident memory fields of pid (kB) from
// /proc/PID/status: VmRSS, VmHWM, RssAnon and RssFile.
func memoryKB(b *testing.B, pid int) map[string]int64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Fatal(err)
	}
	kbs := map[string]int64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "VmRSS", "VmHWM", "RssAnon", "RssFile":
			if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64); err == nil {
				kbs[name] = kb
			}
		}
	}
	if kbs["VmRSS"] == 0 || kbs["VmHWM"] == 0 {
		b.Fatalf("no VmRSS/VmHWM for pid %d", pid)
	}
	return kbs
}
