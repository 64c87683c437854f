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
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/servetest"
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
	// The clinic's record lookup gives the weather read its location: a
	// step's arguments are checked against the tool's inputSchema at
	// resolve (step_arguments_invalid).
	h := hosttest.New(t, func(dir string) {
		jobs := filepath.Join(dir, "jobs.cue")
		b, err := os.ReadFile(jobs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jobs, bytes.Replace(b, []byte(`expr: "{record: input.record_ref}"`), []byte(`expr: "{location: input.record_ref}"`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	host := h.Open()
	ctx := context.Background()
	if _, err := connection.Add(ctx, host, connection.AddOptions{Name: "everything", Connector: "everything", Config: connector.Config{Remote: &remote.Config{URL: srv.URL}}}, h.Change()); err != nil {
		t.Fatal(err)
	}
	rec, err := connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Verified() {
		t.Fatalf("the connection is not verified: %+v", rec.Verification)
	}
	if rec.Verification.Protocol == "" {
		t.Fatalf("verification: no protocol version: %+v", rec.Verification)
	}
	if rec.Config.Remote.Auth != remote.AuthNone {
		t.Fatalf("verification: auth %v, want %v", rec.Config.Remote.Auth, remote.AuthNone)
	}
	if _, ok := rec.Verification.Inventory.Tool("trigger-elicitation-request"); !ok {
		t.Fatal("the elicitation tool is not listed: the downstream client does not offer elicitation")
	}
	h.WriteRegistry(everythingRegistry(hosttest.Name, rec.Verification.Inventory))
	h.Bind(host, "claude-test")

	var operator servetest.Buffer
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if res.Outcome != contract.OutcomeDone {
		t.Fatalf("read: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDone)
	}
	if res.Reason != contract.ReasonRead {
		t.Fatalf("read: reason %s, want %s", res.Reason, contract.ReasonRead)
	}
	var weather struct {
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(res.Content, &weather); err != nil {
		t.Fatalf("read content %s: %v", res.Content, err)
	}
	if weather.Temperature == nil {
		t.Fatalf("read content has no temperature: %s", res.Content)
	}

	srv.Stop()
	res, err = c.Read(ctx, "records.read", json.RawMessage(`{"location":"Chicago"}`))
	if err != nil {
		t.Fatalf("read of a stopped server: %v", err)
	}
	if res.Outcome != contract.OutcomeDidNotRun {
		t.Fatalf("read of a stopped server: outcome %s (reason %s), want %s", res.Outcome, res.Reason, contract.OutcomeDidNotRun)
	}
	_, err = connection.Verify(ctx, host, "everything", connector.Options{}, h.Change())
	codes := hosttest.Codes(t, err)
	for _, want := range []blocking.Code{blocking.RemoteUnreachable, blocking.RemoteVerifyFailed} {
		if !slices.Contains(codes, want) {
			t.Errorf("verify of a stopped server: refused with %v, want %s among them", codes, want)
		}
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
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Remote: &remote.Config{URL: ts.URL + "/mcp", BearerSecretFile: token}})
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
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		wantResult(t, tc.mode, res, tc.outcome, tc.reason)
	}
}
