package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// BenchmarkSessionStart measures a session start as an MCP client sees it:
// from starting the process to the answer of initialize, for
// `oa coordinator serve --deployment clinic` on a quickstart host and,
// side by side in one run, for the go-sdk test server started directly.
// Besides ns/op it reports what servetest.BenchStart does (memory, CPU,
// the tools/list answer); and, as the floor of any oa process,
// `oa version` from start to exit.
func BenchmarkSessionStart(b *testing.B) {
	home := b.TempDir()
	if _, err := demo.Prepare(context.Background(), home, io.Discard); err != nil {
		b.Fatal(err)
	}
	tools := connectortest.WriteTools(b, b.TempDir(), []connectortest.ToolSpec{{Name: "read_record", Description: "Read a record."}, {Name: "append_note", Description: "Append a note."}})
	oa := oaBinary(b)
	b.Run("coordinator", func(b *testing.B) {
		servetest.BenchStart(b, func() *exec.Cmd {
			cmd := exec.Command(oa, "coordinator", "serve", "--deployment", demo.Deployment)
			cmd.Env = append(os.Environ(), "OA_HOME="+home)
			return cmd
		})
	})
	b.Run("downstream", func(b *testing.B) {
		server := connectortest.Server(b)
		servetest.BenchStart(b, func() *exec.Cmd { return exec.Command(server, "--tools", tools) })
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
