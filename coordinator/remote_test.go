package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/internal/testkit/interoptest"
	"github.com/oa-dev/oa/resolve"
)

// everythingRegistry maps the clinic's capabilities to tools of the stock
// server-everything: its structured weather read for records.read, its
// elicitation trigger for records.note.append; every other tool it lists
// is registered disabled, so the connection exposes nothing beyond the
// package's ceiling.
func everythingRegistry(host string, inv connector.Inventory) string {
	var others strings.Builder
	for _, tool := range inv.Tools {
		if tool.Name != "get-structured-content" && tool.Name != "trigger-elicitation-request" {
			fmt.Fprintf(&others, "\t{name: %q, connector: \"everything\", capability: \"records.read\", risk: \"read_only\", enabled: false},\n", tool.Name)
		}
	}
	return fmt.Sprintf(`package host

host: %q
capabilities: {
	"records.read": {risk: "read_only", description: "Read one record."}
	"records.note.append": {risk: "consequential", description: "Append one note."}
}
connectors: {
	"everything": {aliases: [], availability: "available"}
}
tools: [
	{name: "get-structured-content", connector: "everything", capability: "records.read", risk: "read_only", enabled: true},
	{name: "trigger-elicitation-request", connector: "everything", capability: "records.note.append", risk: "consequential", enabled: true},
%s]
`, host, others.String())
}

// TestRemoteServerEverything: the stock server-everything, run in
// streamableHttp mode on loopback, is added as a remote connection,
// verified (inventory and protocol recorded), bound, and read through the
// coordinator under the plan check; once it stops, verification is a
// named refusal and a read is did_not_run (app_offline).
func TestRemoteServerEverything(t *testing.T) {
	srv := interoptest.StartEverything(t)
	h := hosttest.New(t, nil)
	host := h.Open()
	ctx := context.Background()
	if _, err := connection.Add(ctx, host, connection.AddOptions{Name: "everything", Connector: "everything", Config: connector.Config{Remote: &connector.Remote{URL: srv.URL}}}, h.Change()); err != nil {
		t.Fatal(err)
	}
	rec, err := connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Verified() || rec.Verification.Protocol == "" || rec.Config.Remote.Auth != connector.AuthNone {
		t.Fatalf("verification: %+v", rec.Verification)
	}
	if _, ok := rec.Verification.Inventory.Tool("trigger-elicitation-request"); !ok {
		t.Fatal("the elicitation tool is not listed: the downstream client does not offer elicitation")
	}
	h.WriteRegistry(everythingRegistry(hosttest.Name, rec.Verification.Inventory))
	h.Bind(host, "claude-test")

	var operator lockedBuffer
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil || res.Outcome != contract.OutcomeDone || res.Reason != contract.ReasonRead {
		t.Fatalf("read: %v %+v", err, res)
	}
	var weather struct {
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(res.Content, &weather); err != nil || weather.Temperature == nil {
		t.Fatalf("read content: %s", res.Content)
	}

	srv.Stop()
	res, err = c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil || res.Outcome != contract.OutcomeDidNotRun {
		t.Fatalf("read of a stopped server: %v %+v", err, res)
	}
	_, err = connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	if c := hosttest.Codes(t, err); !slices.Contains(c, blocking.RemoteUnreachable) || !slices.Contains(c, blocking.ConnectionVerifyFailed) {
		t.Fatalf("verify of a stopped server: %v", c)
	}
}

// lockedBuffer is an operator channel safe to write from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type askAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// askingDeployment binds the clinic to a go-sdk remote server whose "ask"
// tool (records.read) elicits a flat form and answers with exactly what
// came back, and opens a coordinator on it.
func askingDeployment(t *testing.T) (*coordinator.Coordinator, *lockedBuffer) {
	c, operator, _ := askingDeploymentURL(t)
	return c, operator
}

// askingDeploymentURL is askingDeployment whose "ask" tool asks in URL
// mode while the returned flag is set.
func askingDeploymentURL(t *testing.T) (*coordinator.Coordinator, *lockedBuffer, *atomic.Bool) {
	t.Helper()
	urlMode := &atomic.Bool{}
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the person.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, askAnswer, error) {
			params := &mcp.ElicitParams{Message: "Which ward is Ada in?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ward":{"type":"string"}},"required":["ward"]}`)}
			if urlMode.Load() {
				params = &mcp.ElicitParams{Mode: "url", Message: "Sign in to the ward desk.", URL: "https://ward.example.com/sign-in", ElicitationID: "e-1"}
			}
			res, err := req.Session.Elicit(ctx, params)
			if err != nil {
				return nil, askAnswer{}, err
			}
			return nil, askAnswer{Action: res.Action, Content: res.Content}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Append a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, askAnswer, error) {
			return nil, askAnswer{Action: "noted"}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	h := hosttest.New(t, nil)
	h.WriteRegistry(fmt.Sprintf(`package host

host: %q
capabilities: {
	"records.read": {risk: "read_only", description: "Read one record."}
	"records.note.append": {risk: "consequential", description: "Append one note."}
}
connectors: "asking": {aliases: [], availability: "available"}
tools: [
	{name: "ask", connector: "asking", capability: "records.read", risk: "read_only", enabled: true},
	{name: "note", connector: "asking", capability: "records.note.append", risk: "consequential", enabled: true},
]
`, hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "ward-desk", "asking", connector.Config{Remote: &connector.Remote{URL: srv.URL + "/mcp"}})
	h.Bind(host, "claude-test")
	operator := &lockedBuffer{}
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, operator, urlMode
}

// TestDownstreamElicitationForwarded: a downstream server's elicitation
// during a read reaches the person behind the calling MCP client through
// the coordinator's input request, labelled with the connection and the
// capability, and the person's answer (accept with content, decline,
// cancel) reaches the server unchanged. A client without elicitation
// yields cancel without being asked. Neither the question nor the answer
// reaches the operator's channel.
func TestDownstreamElicitationForwarded(t *testing.T) {
	c, operator := askingDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = coordinator.Serve(ctx, c, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "v1"}, &mcp.ClientOptions{ElicitationHandler: handler}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	read := func(cs *mcp.ClientSession) askAnswer {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("records_read: %v %+v", err, res)
		}
		var out struct {
			Outcome contract.Outcome `json:"outcome"`
			Content askAnswer        `json:"content"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil || out.Outcome != contract.OutcomeDone {
			t.Fatalf("records_read answered %s", raw)
		}
		return out.Content
	}
	for _, want := range []askAnswer{{Action: "accept", Content: map[string]any{"ward": "B-4"}}, {Action: "decline"}, {Action: "cancel"}} {
		var asked []string
		cs := connect(func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: want.Action, Content: want.Content}, nil
		})
		got := read(cs)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the server received %+v, want %+v", got, want)
		}
		if len(asked) != 1 || !strings.Contains(asked[0], `connection "ward-desk"`) || !strings.Contains(asked[0], `capability "records.read"`) || !strings.Contains(asked[0], "Which ward is Ada in?") {
			t.Fatalf("the person was asked %q", asked)
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = coordinator.Serve(ctx, c, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "no-elicitation", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := read(cs); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("a client without elicitation: the server received %+v", got)
	}
	if log := operator.String(); strings.Contains(log, "Which ward") || strings.Contains(log, "B-4") {
		t.Fatalf("the operator channel holds the question or the answer:\n%s", log)
	}
}

// TestRemoteEffectOutcomes: the four-outcome contract over a remote
// connection (the sandbox records server served over Streamable HTTP). A
// change the server refuses with 401 is did_not_run
// (app_credentials_refused); one whose request is sent and whose
// connection is then cut, or that is never answered, is not_sure_if_saved;
// one that cannot be sent (its secret unreadable) is did_not_run
// (app_offline); an untouched server completes.
func TestRemoteEffectOutcomes(t *testing.T) {
	var mode atomic.Value
	mode.Store("ok")
	release := make(chan struct{})
	srv := sandbox.NewServer("")
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("tok-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	t.Cleanup(ts.Close) // runs after release is closed below
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"append_note"`)) && bytes.Contains(body, []byte(`"tools/call"`)) {
			switch mode.Load() {
			case "401":
				w.WriteHeader(http.StatusUnauthorized)
				return
			case "cut":
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			case "hang":
				<-release
				return
			}
		}
		if mode.Load() == "unsendable" && bytes.Contains(body, []byte(`"read_record"`)) {
			// The step before the change reads; from now on the token
			// cannot be read, so the change is never sent.
			defer os.Chmod(token, 0o644)
		}
		handler.ServeHTTP(w, r)
	})
	ts.Start()
	defer close(release)

	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Remote: &connector.Remote{URL: ts.URL + "/mcp", BearerSecretFile: token}})
	h.Bind(host, "claude-test")
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: io.Discard, EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		mode    string
		outcome contract.Outcome
		reason  contract.Reason
	}{
		{"401", contract.OutcomeDidNotRun, contract.ReasonAppCredentials},
		{"cut", contract.OutcomeNotSureIfSaved, contract.ReasonEffectUnclear},
		{"hang", contract.OutcomeNotSureIfSaved, contract.ReasonEffectTimeout},
		{"unsendable", contract.OutcomeDidNotRun, contract.ReasonAppOffline},
		{"ok", contract.OutcomeDone, contract.ReasonVerified},
	} {
		mode.Store(tc.mode)
		if err := os.Chmod(token, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: "remote-" + tc.mode, Inputs: inputs("AB-1234"), Wait: time.Minute})
		if err != nil || res.Outcome != tc.outcome || res.Reason != tc.reason {
			t.Fatalf("%s: %v %s/%s, want %s/%s", tc.mode, err, res.Outcome, res.Reason, tc.outcome, tc.reason)
		}
	}
}

// TestDownstreamURLElicitation: a URL-mode request is forwarded only to a
// client that declared URL support; a form-only client is never asked and
// the server gets cancel.
func TestDownstreamURLElicitation(t *testing.T) {
	c, _, urlMode := askingDeploymentURL(t)
	urlMode.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		caps *mcp.ClientCapabilities
		want string
	}{
		{nil, `{"action":"cancel"}`},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}, `{"action":"accept"}`},
	} {
		var asked []*mcp.ElicitParams
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = coordinator.Serve(ctx, c, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "person", Version: "v1"}, &mcp.ClientOptions{Capabilities: tc.caps,
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params)
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "records_read", Arguments: map[string]any{}})
		cs.Close()
		if err != nil || res.IsError {
			t.Fatalf("records_read: %v %+v", err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &out)
		if string(out.Content) != tc.want {
			t.Fatalf("url support %v: the server received %s, want %s", tc.caps != nil, out.Content, tc.want)
		}
		switch {
		case tc.caps == nil && len(asked) != 0:
			t.Fatalf("a form-only client was asked a URL request: %+v", asked[0])
		case tc.caps != nil && (len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != "https://ward.example.com/sign-in"):
			t.Fatalf("a URL client was asked %+v", asked)
		}
	}
}
