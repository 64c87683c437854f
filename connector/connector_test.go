package connector_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// baseTools is a small, valid tool list.
func baseTools() []connectortest.ToolSpec {
	return []connectortest.ToolSpec{
		{
			Name:        "lookup",
			Description: "Look a thing up.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`),
		},
		{
			Name:         "write",
			Description:  "Write a thing.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer"}},"required":["id"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
			Annotations:  json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false}`),
		},
	}
}

// serverConfig is a connection to the test server serving tools.
func serverConfig(t *testing.T, tools []connectortest.ToolSpec, flags ...string) connector.Config {
	t.Helper()
	file := connectortest.WriteTools(t, t.TempDir(), tools)
	return connector.Config{Command: connectortest.Server(t), Args: append([]string{"--tools", file}, flags...), Confinement: connectortest.Allow(filepath.Dir(t.TempDir()))}
}

// refusal asserts err is a refusal with code and returns it.
func refusal(t *testing.T, err error, code blocking.Code) *blocking.Error {
	t.Helper()
	rs := blocking.Refusals(err)
	if len(rs) == 0 || rs[0].Code != code {
		t.Fatalf("want refusal %s, got %v", code, err)
	}
	return rs[0]
}

func probe(t *testing.T, cfg connector.Config) *connector.Inventory {
	t.Helper()
	inv, err := connector.Probe(context.Background(), cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestInventoryDigestStableAcrossProcessesOrderAndPages(t *testing.T) {
	t.Parallel()
	tools := baseTools()
	a := probe(t, serverConfig(t, tools))
	b := probe(t, serverConfig(t, tools))
	reversed := []connectortest.ToolSpec{tools[1], tools[0]}
	c := probe(t, serverConfig(t, reversed))
	d := probe(t, serverConfig(t, reversed, "--page-size", "1"))
	for _, other := range []*connector.Inventory{b, c, d} {
		if other.Digest != a.Digest {
			t.Fatalf("inventory digest differs: %s vs %s", a.Digest, other.Digest)
		}
	}
	if len(a.Tools) != 2 || a.Tools[0].Name != "lookup" || a.Tools[1].Name != "write" {
		t.Fatalf("tools not sorted by name: %+v", a.Tools)
	}
	if !strings.HasPrefix(a.Digest, "sha256:") || len(a.Digest) != 71 {
		t.Fatalf("digest format: %s", a.Digest)
	}
	got, ok := a.Tool("write")
	if !ok || got.Digest != a.Tools[1].Digest {
		t.Fatal("Inventory.Tool does not find write")
	}
	if _, ok := a.Tool("nope"); ok {
		t.Fatal("Inventory.Tool finds an unlisted tool")
	}
}

func TestInventoryNormalizes(t *testing.T) {
	t.Parallel()
	inv := probe(t, serverConfig(t, baseTools()))
	w, _ := inv.Tool("write")
	if string(w.InputSchema) != `{"properties":{"id":{"type":"string"},"n":{"type":"integer"}},"required":["id"],"type":"object"}` {
		t.Fatalf("input schema not canonical: %s", w.InputSchema)
	}
	a := w.Annotations
	if a.ReadOnly == nil || *a.ReadOnly || a.Destructive == nil || *a.Destructive || a.Idempotent == nil || *a.Idempotent || a.OpenWorld == nil || !*a.OpenWorld {
		t.Fatalf("annotations not filled with MCP defaults: %+v", a)
	}
	// A server that states the defaults lists the same tool as one that
	// leaves them out.
	explicit := baseTools()
	explicit[1].Annotations = json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":true}`)
	if probe(t, serverConfig(t, explicit)).Digest != inv.Digest {
		t.Fatal("stating a default annotation changed the digest")
	}
}

func TestDigestChanges(t *testing.T) {
	t.Parallel()
	base := probe(t, serverConfig(t, baseTools()))
	baseWrite, _ := base.Tool("write")
	baseLookup, _ := base.Tool("lookup")
	changes := map[string]func(ts []connectortest.ToolSpec){
		"input schema": func(ts []connectortest.ToolSpec) {
			ts[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
		},
		"output schema": func(ts []connectortest.ToolSpec) { ts[1].OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"description":   func(ts []connectortest.ToolSpec) { ts[1].Description = "Write a thing!" },
		"annotation":    func(ts []connectortest.ToolSpec) { ts[1].Annotations = json.RawMessage(`{"destructiveHint":true}`) },
		"idempotent": func(ts []connectortest.ToolSpec) {
			ts[1].Annotations = json.RawMessage(`{"destructiveHint":false,"idempotentHint":true}`)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := baseTools()
			change(ts)
			inv := probe(t, serverConfig(t, ts))
			w, _ := inv.Tool("write")
			l, _ := inv.Tool("lookup")
			if w.Digest == baseWrite.Digest {
				t.Error("tool digest unchanged")
			}
			if inv.Digest == base.Digest {
				t.Error("inventory digest unchanged")
			}
			if l.Digest != baseLookup.Digest {
				t.Error("an unchanged tool's digest changed")
			}
		})
	}
}

func TestInventoryInvalid(t *testing.T) {
	t.Parallel()
	cases := map[string]func(ts []connectortest.ToolSpec) []connectortest.ToolSpec{
		"duplicate name": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec { return append(ts, ts[0]) },
		"no description": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec { ts[0].Description = " "; return ts },
		"schema not object type": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec {
			ts[0].InputSchema = json.RawMessage(`{"type":"string"}`)
			return ts
		},
		"schema not an object": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec {
			ts[0].InputSchema = json.RawMessage(`[1,2]`)
			return ts
		},
		"no input schema": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec {
			ts[0].InputSchema, ts[0].NoInputSchema = nil, true
			return ts
		},
		"output not object": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec {
			ts[1].OutputSchema = json.RawMessage(`{"type":"array"}`)
			return ts
		},
		"bad name": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec { ts[0].Name = "look up"; return ts },
		"remote ref": func(ts []connectortest.ToolSpec) []connectortest.ToolSpec {
			ts[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.invalid/s.json"}}}`)
			return ts
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := connector.Probe(context.Background(), serverConfig(t, mutate(baseTools())), connector.Options{})
			e := refusal(t, err, blocking.ConnectorInventoryInvalid)
			if !strings.HasPrefix(e.Path, "tools[") {
				t.Fatalf("refusal does not point at a tool: %v", err)
			}
			if strings.Contains(err.Error(), "look up") || strings.Contains(err.Error(), "example.invalid") {
				t.Fatalf("refusal echoes what the server wrote: %v", err)
			}
		})
	}
}

// pids reads "SERVERPID GRANDCHILDPID" from the test server's pid file.
func pids(t *testing.T, file string) (int, int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if p, ok := connectortest.PIDFile(file, 2); ok {
			return p[0], p[1]
		}
		if time.Now().After(deadline) {
			t.Fatal("no pid file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running reports whether pid is a process that can still run (not gone,
// not a zombie waiting for init).
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func assertGone(t *testing.T, pidList ...int) {
	t.Helper()
	for _, p := range pidList {
		if p > 0 && running(p) {
			t.Errorf("process %d still running", p)
		}
	}
}

func TestCloseEndsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cfg := serverConfig(t, baseTools(), "--spawn-grandchild", "--pid-file", pidFile)
	s, err := connector.Open(context.Background(), cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server, grandchild := pids(t, pidFile)
	if !running(grandchild) {
		t.Fatal("grandchild not running before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, server, grandchild)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = s.Inventory(context.Background())
	refusal(t, err, blocking.ConnectorClosed)
}

func TestCallTimeoutEndsTree(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cfg := serverConfig(t, baseTools(), "--hang-on-call", "--spawn-grandchild", "--ignore-term", "--pid-file", pidFile)
	s, err := connector.Open(context.Background(), cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	server, grandchild := pids(t, pidFile)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Call(ctx, "lookup", map[string]any{"id": "x"})
	refusal(t, err, blocking.ConnectorTimeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	assertGone(t, server, grandchild)
	_, err = s.Call(context.Background(), "lookup", map[string]any{"id": "x"})
	refusal(t, err, blocking.ConnectorClosed)
}

func TestCancelEndsTree(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cfg := serverConfig(t, baseTools(), "--spawn-grandchild", "--pid-file", pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := connector.Open(ctx, cfg, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server, grandchild := pids(t, pidFile)
	cancel()
	if err := s.Close(); err != nil { // waits for the shutdown the cancel began
		t.Fatal(err)
	}
	assertGone(t, server, grandchild)
}

func TestStartTimeoutEndsTree(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cfg := serverConfig(t, baseTools(), "--hang-at-start", "--spawn-grandchild", "--pid-file", pidFile)
	start := time.Now()
	// Long enough for the confinement launcher and the server to start
	// (and write the pid file) on a loaded machine, before it hangs.
	_, err := connector.Open(context.Background(), cfg, connector.Options{Timeout: 2 * time.Second})
	refusal(t, err, blocking.ConnectorTimeout)
	if d := time.Since(start); d > 7*time.Second {
		t.Fatalf("start timeout took %v", d)
	}
	server, grandchild := pids(t, pidFile)
	assertGone(t, server, grandchild)
}

func TestStartFailed(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-STDERR-0123456789abcdef"
	var stderr strings.Builder
	cfg := serverConfig(t, baseTools(), "--exit-at-start", "--stderr-text", secret)
	_, err := connector.Open(context.Background(), cfg, connector.Options{Stderr: &stderr})
	refusal(t, err, blocking.ConnectorStartFailed)
	if strings.Contains(err.Error(), secret) {
		t.Fatal("refusal echoes the server's stderr")
	}
	if !strings.Contains(stderr.String(), secret) {
		t.Fatal("the operator's stderr did not get the server's stderr")
	}
	_, err = connector.Open(context.Background(), connector.Config{Command: filepath.Join(t.TempDir(), "missing")}, connector.Options{})
	refusal(t, err, blocking.ConnectorStartFailed)
	_, err = connector.Open(context.Background(), connector.Config{}, connector.Options{})
	refusal(t, err, blocking.ConnectorConfigInvalid)
}

func TestCall(t *testing.T) {
	t.Parallel()
	tools := baseTools()
	tools = append(tools,
		connectortest.ToolSpec{Name: "liar", Description: "Breaks its output schema.",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
			Result:       json.RawMessage(`{"ok":"sk-live-RESULT-secret"}`)},
		connectortest.ToolSpec{Name: "fails", Description: "Always a tool error.", IsError: true,
			OutputSchema: json.RawMessage(`{"type":"object","required":["id"]}`), Result: json.RawMessage(`{"error":"nope"}`)},
	)
	s, err := connector.Open(context.Background(), serverConfig(t, tools), connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	res, err := s.Call(ctx, "write", map[string]any{"n": 2, "id": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || string(res.Structured) != `{"id":"a","n":2}` {
		t.Fatalf("echo: %+v %s", res, res.Structured)
	}
	res, err = s.Call(ctx, "fails", nil)
	if err != nil || !res.IsError || string(res.Structured) != `{"error":"nope"}` {
		t.Fatalf("tool error: %v %+v", err, res)
	}

	const value = "sk-live-ARG-secret-value"
	for _, args := range []any{[]int{1}, "text", map[string]any{"id": 7}, map[string]any{"id": value, "extra": value}, map[string]any{}} {
		_, err := s.Call(ctx, "lookup", args)
		refusal(t, err, blocking.ConnectorArgumentsInvalid)
		if strings.Contains(err.Error(), value) {
			t.Fatal("refusal echoes an argument value")
		}
	}
	_, err = s.Call(ctx, "liar", nil)
	refusal(t, err, blocking.ConnectorResultInvalid)
	if strings.Contains(err.Error(), "RESULT") {
		t.Fatal("refusal echoes returned content")
	}
	_, err = s.Call(ctx, "unlisted", nil)
	refusal(t, err, blocking.ConnectorToolUnknown)
	// Refusals before sending leave the session usable.
	if _, err := s.Call(ctx, "lookup", map[string]any{"id": "b"}); err != nil {
		t.Fatal(err)
	}
}

func TestCrashDuringCall(t *testing.T) {
	t.Parallel()
	s, err := connector.Open(context.Background(), serverConfig(t, baseTools(), "--crash-on-call"), connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(context.Background(), "lookup", map[string]any{"id": "x"})
	refusal(t, err, blocking.ConnectorCallFailed)
	_, err = s.Call(context.Background(), "lookup", map[string]any{"id": "x"})
	refusal(t, err, blocking.ConnectorClosed)
}
