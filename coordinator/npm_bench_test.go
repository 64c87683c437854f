package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/internal/testkit/interoptest"
	"github.com/oa-dev/oa/internal/testkit/servetest"
)

// BenchmarkRunNpmMemory: issue 26's run figure against a real Node server
// nobody here wrote — the pinned @modelcontextprotocol/server-memory,
// which keeps its graph in a file, confined as its connection records.
// coordinator: one run of record_entity (read → guard → effect → check:
// open_nodes, create_entities, open_nodes, four CUE evaluations, the
// plan checks, the durable marks and the signed receipt) through
// Coordinator.Run, each with a new entity; direct: the same three calls
// with the same arguments from a go-sdk client session (connector.Open)
// to the same server. The ratio is coordinator/direct.
func BenchmarkRunNpmMemory(b *testing.B) {
	servers := interoptest.Confine(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatalf("node is needed to run the npm server: %v", err)
	}
	memDir, root := b.TempDir(), b.TempDir()
	b.Setenv("MEMORY_FILE_PATH", filepath.Join(memDir, "memory.jsonl"))
	d := hosttest.New(b, useBundle(b, "confined-npm"))
	d.WriteRegistry(confinedNpmRegistry())
	host := d.Open()
	memory := connector.Config{Command: node, Args: []string{servers.Memory}, Env: []string{"MEMORY_FILE_PATH"},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{memDir}}}
	d.AddConnection(host, "memory", "npm.memory", memory)
	d.AddConnection(host, "files", "npm.files", connector.Config{Command: node, Args: []string{servers.Filesystem, root},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{root}}})
	d.Bind(host, "claude-test")
	settleHostFiles()
	ctx := context.Background()
	// Entity names match ^[A-Z]{2}-[0-9]{4}$: each op gets a new one, so
	// the guard always finds it absent and the graph grows alike in both.
	name := func(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i%10000) }
	// Counted across -count rounds: the host and the graph persist, and a
	// request_id seen before would be answered from the record.
	runs, sets := 0, 0

	b.Run("coordinator", func(b *testing.B) {
		c, err := coordinator.Open(ctx, coordinator.Options{Home: d.Home, Deployment: "clinic", EffectTimeout: 30 * time.Second, Operator: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run := func() {
			runs++
			in, _ := json.Marshal(map[string]string{"name": name("CO", runs), "observation": "triaged"})
			res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "record_entity", Inputs: in, RequestID: fmt.Sprintf("npm-%d", runs), Wait: time.Minute})
			if err != nil || res.Outcome != contract.OutcomeDone || res.Reason != contract.ReasonVerified {
				b.Fatalf("run %d: %+v, %v", runs, res, err)
			}
		}
		run() // the server's start (hundreds of ms of Node) is the session's, not a run's
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			run()
		}
		cpu.report(b)
	})
	b.Run("direct", func(b *testing.B) {
		s, err := connector.Open(ctx, memory, connector.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		calls := func() {
			sets++
			n := name("DI", sets)
			lookup := map[string]any{"names": []string{n}}
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"open_nodes", lookup},
				{"create_entities", map[string]any{"entities": []map[string]any{{"name": n, "entityType": "record", "observations": []string{"triaged"}}}}},
				{"open_nodes", lookup},
			} {
				res, err := s.Call(ctx, call.tool, call.args)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", call.tool, err, res)
				}
			}
		}
		calls() // as for the coordinator: the first set is the session's
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			calls()
		}
		cpu.report(b)
	})
}

// BenchmarkSessionStartNpm: issue 26's session start against the kind of
// server it names, as an MCP client sees it — from starting the process
// to the answer of initialize. coordinator: `oa coordinator serve` on a
// host whose plan uses the pinned Node server-memory and
// server-filesystem, each confined as its connection records (oa answers
// while it starts both and checks their tool lists); server-memory: that
// Node server started directly, unconfined, the floor any client of it
// pays. The difference is what governance adds to a session's start; the
// other figures are servetest.BenchStart's.
func BenchmarkSessionStartNpm(b *testing.B) {
	servers := interoptest.Confine(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatalf("node is needed to run the npm servers: %v", err)
	}
	memDir, root := b.TempDir(), b.TempDir()
	b.Setenv("MEMORY_FILE_PATH", filepath.Join(memDir, "memory.jsonl"))
	h := &servetest.Host{Host: hosttest.New(b, useBundle(b, "confined-npm")), OA: servetest.Binary(b)}
	h.WriteRegistry(confinedNpmRegistry())
	host := h.Open()
	h.AddConnection(host, "memory", "npm.memory", connector.Config{Command: node, Args: []string{servers.Memory}, Env: []string{"MEMORY_FILE_PATH"},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{memDir}}})
	h.AddConnection(host, "files", "npm.files", connector.Config{Command: node, Args: []string{servers.Filesystem, root},
		Confinement: &confine.Profile{Read: []string{servers.NodeModules}, Write: []string{root}}})
	h.Bind(host, "claude-test")
	b.Run("coordinator", func(b *testing.B) {
		servetest.BenchStart(b, func() *exec.Cmd {
			cmd := exec.Command(h.OA, "coordinator", "serve", "--deployment", "clinic")
			cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
			return cmd
		})
	})
	b.Run("server-memory", func(b *testing.B) {
		servetest.BenchStart(b, func() *exec.Cmd { return exec.Command(node, servers.Memory) })
	})
}
