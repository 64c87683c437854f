// Package servetest drives `oa coordinator serve` as a real stdio
// subprocess with the go-sdk client, against real hosts (hosttest): the
// oa binary built once per test process, a bound clinic deployment on the
// sandbox connector, and a client that checks every answer against the
// tool's output schema and remembers what it saw. Nothing is mocked. The
// coordinator's tests and its MCP face's (coordinator/mcpserve) share it.
package servetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// binary is the one oa binary of this test process, built on first use
// into a folder Main removes.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs the tests and removes the oa binary Binary built; call it
// from the package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// Binary is the oa binary, built once per test process (go build of
// cmd/oa).
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "oa-coordinator-test-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "oa")
		out, err := exec.Command("go", "build", "-o", binary.path, "github.com/oa-dev/oa/cmd/oa").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// Host is a bound clinic deployment whose home a subprocess serves.
type Host struct {
	*hosttest.Host
	// OA is the oa binary that serves it.
	OA string
}

// NewHost is a clinic deployment bound under registry on the sandbox
// connector, served by the binary oa.
func NewHost(t *testing.T, oa, registry string) *Host {
	t.Helper()
	h := &Host{Host: hosttest.New(t, nil), OA: oa}
	h.WriteRegistry(registry)
	host := h.Open()
	h.AddConnection(host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(host, "claude-test")
	return h
}

// ApprovalRegistry is the starter registry with records.note.append
// requiring a person's approval.
func ApprovalRegistry() string {
	src := resolve.StarterRegistry(hosttest.Name)
	out := strings.Replace(src, `description: "Append one note to a record."`, `description: "Append one note to a record."`+"\n\t\tapproval:    \"required\"", 1)
	if out == src {
		panic("starter registry changed: cannot mark records.note.append approval required")
	}
	return out
}

// ReadApprovalRegistry is the starter registry asking a person before
// every read of a record.
func ReadApprovalRegistry() string {
	return strings.Replace(resolve.StarterRegistry(hosttest.Name), `description: "Read one record with its status and notes."`, "description: \"Read one record with its status and notes.\"\n\t\tapproval: \"required\"", 1)
}

// Client is one client session with a subprocess server.
type Client struct {
	t *testing.T
	// Session is the go-sdk client session.
	Session *mcp.ClientSession
	// Stderr is the server's operator channel.
	Stderr *bytes.Buffer
	// Tools and Outputs are the tools listed at connect and their
	// resolved output schemas.
	Tools   map[string]*mcp.Tool
	Outputs map[string]*jsonschema.Resolved

	mu sync.Mutex
	// seen collects every result and error text the client saw.
	seen []string
	// asked collects every elicitation message.
	asked []string
}

// ClientOptions are how a client connects.
type ClientOptions struct {
	// Answer, when set, makes the client offer elicitation and answer
	// every form with it.
	Answer func(*mcp.ElicitRequest) *mcp.ElicitResult
	// NoMRTR turns the client's multi-round-trip requests off.
	NoMRTR bool
	// Protocol is the protocol version to ask for ("" the go-sdk's).
	Protocol string
	// ExtraEnv is added to the server's environment.
	ExtraEnv []string
	// ServeExtras are added to `oa coordinator serve`'s arguments.
	ServeExtras []string
}

// Connect starts `oa coordinator serve` on h and connects a client to it,
// listing its tools.
func (h *Host) Connect(t *testing.T, o ClientOptions) *Client {
	t.Helper()
	c := &Client{t: t, Stderr: &bytes.Buffer{}}
	cmd := exec.Command(h.OA, append([]string{"coordinator", "serve", "--deployment", "clinic", "--effect-timeout", "2s"}, o.ServeExtras...)...)
	cmd.Env = append(os.Environ(), append([]string{"OA_HOME=" + h.Home}, o.ExtraEnv...)...)
	cmd.Stderr = c.Stderr
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: o.NoMRTR}}
	if o.Answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.asked = append(c.asked, req.Params.Message)
			c.mu.Unlock()
			return o.Answer(req), nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "oa-test-client", Version: "v1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var sopts *mcp.ClientSessionOptions
	if o.Protocol != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: o.Protocol}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sopts)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, c.Stderr)
	}
	c.Session = cs
	t.Cleanup(func() { cs.Close() })
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Tools, c.Outputs = map[string]*mcp.Tool{}, map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		c.Tools[tool.Name] = tool
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
		}
		c.Outputs[tool.Name] = rs
	}
	return c
}

// Seen is every result and error text the client saw.
func (c *Client) Seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

// Asked is every elicitation message the client was asked.
func (c *Client) Asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// Raw calls a tool with params as given and records what came back.
func (c *Client) Raw(params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.Session.CallTool(ctx, params)
	c.mu.Lock()
	if err != nil {
		c.seen = append(c.seen, err.Error())
	}
	if res != nil {
		b, _ := json.Marshal(res)
		c.seen = append(c.seen, string(b))
	}
	c.mu.Unlock()
	return res, err
}

// Call calls a tool and checks the answer: structuredContent valid
// against the output schema and mirrored as JSON text, or a fixed-copy
// tool error. It returns the structured content (nil for a tool error)
// and the error code.
func (c *Client) Call(name string, args any) (map[string]any, string) {
	c.t.Helper()
	res, err := c.Raw(&mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: protocol error: %v\nstderr:\n%s", name, err, c.Stderr)
	}
	return c.Check(name, res)
}

// Check checks an answer of tool name as Call does.
func (c *Client) Check(name string, res *mcp.CallToolResult) (map[string]any, string) {
	c.t.Helper()
	if res.IsError {
		if res.StructuredContent != nil || len(res.Content) != 1 {
			c.t.Fatalf("%s: tool error shape: %+v", name, res)
		}
		var e struct{ Error, Message string }
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &e); err != nil || e.Error == "" || e.Message == "" {
			c.t.Fatalf("%s: tool error is not fixed copy: %v", name, res.Content[0])
		}
		return nil, e.Error
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		c.t.Fatalf("%s: no structured content", name)
	}
	var v any
	_ = json.Unmarshal(b, &v)
	if err := c.Outputs[name].Validate(v); err != nil {
		c.t.Fatalf("%s: result does not validate against its output schema: %v\n%s", name, err, b)
	}
	if len(res.Content) != 1 {
		c.t.Fatalf("%s: want one text content", name)
	}
	var mirrored any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &mirrored); err != nil || !JSONEqual(mirrored, v) {
		c.t.Fatalf("%s: text content does not mirror the structured content", name)
	}
	m, _ := v.(map[string]any)
	return m, ""
}

// Run runs append_triage_note with inputs under requestID, waiting up to
// 30 seconds; a tool error fails the test.
func (c *Client) Run(requestID string, inputs map[string]any) map[string]any {
	c.t.Helper()
	out, code := c.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": inputs, "request_id": requestID, "wait_seconds": 30})
	if code != "" {
		c.t.Fatalf("run_workflow %s: tool error %s\nstderr:\n%s", requestID, code, c.Stderr)
	}
	return out
}

// JSONEqual reports whether a and b encode to the same JSON.
func JSONEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Triage is append_triage_note's inputs for record with summary.
func Triage(record, summary string) map[string]any {
	return map[string]any{"record_ref": record, "urgency": "soon", "summary": summary}
}

// Want fails the test unless the result res (as the client sees it) has
// outcome and reason.
func Want(t *testing.T, what string, res map[string]any, outcome contract.Outcome, reason contract.Reason) {
	t.Helper()
	if res["outcome"] != string(outcome) || res["reason"] != string(reason) {
		t.Fatalf("%s: outcome %v reason %v, want %s %s\n%v", what, res["outcome"], res["reason"], outcome, reason, res)
	}
}

// SkippableCheck edits clinic-triage so that confirm_note may be skipped
// while record_open holds.
func SkippableCheck(t *testing.T) func(dir string) {
	return func(dir string) {
		p := filepath.Join(dir, "jobs.cue")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out := strings.Replace(string(b), `evidence: "note_saved"}`, `evidence: "note_saved", skippable_while: "record_open"}`, 1)
		if out == string(b) {
			t.Fatal("jobs.cue has no confirm_note step to edit")
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Buffer is an operator channel safe to write from several goroutines.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
