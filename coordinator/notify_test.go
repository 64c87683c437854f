package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestPauseNotifies: with notify in the host policy, a run that pauses
// for approval runs the command — with the item's id and fixed copy in
// its environment, never the record or the note — and posts the webhook
// the same; the pause does not wait for either (the webhook's first
// answer is held until the run has answered paused), a 503 is retried,
// and the command's failure (exit status 3) is told to the operator in
// fixed words.
func TestPauseNotifies(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env.txt")
	script := filepath.Join(dir, "notify.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv | grep '^OA_' > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	bodies := make(chan string, 4)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			<-release
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		bodies <- string(b)
	}))
	defer srv.Close()
	defer close(release)

	h := hosttest.New(t, nil)
	f, err := os.OpenFile(filepath.Join(h.Home, host.PolicyFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\nnotify: {command: [%q, %q, %q], webhook: %q}\n", "/bin/sh", script, out, srv.URL+"/hook?token=x")
	f.Close()
	ctx := context.Background()
	opened := h.Open()
	if _, _, err := admit.Admit(ctx, opened, h.Release, admit.AdmitOptions{AdmittedBy: "Test Operator", Now: h.Now}); err != nil {
		t.Fatal(err)
	}
	h.WriteRegistry(servetest.ApprovalRegistry())
	h.AddConnection(opened, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(opened, "claude-test")
	operator := &servetest.Buffer{}
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The webhook's first answer is held: the run answers paused anyway.
	res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"Planted-Notify-Zq7"}`), RequestID: "notify-1", Wait: 30 * time.Second})
	if err != nil {
		t.Fatalf("paused: %v", err)
	}
	if res.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("paused: reason %s, want %s", res.Reason, contract.ReasonApprovalRequired)
	}
	item, err := c.AttentionItem(ctx, res.AttentionID)
	if err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
	body := <-bodies // after a 503, retried
	var n coordinator.Notice
	if err := json.Unmarshal([]byte(body), &n); err != nil {
		t.Fatalf("webhook body %s: %v", body, err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"attention_id", n.AttentionID, item.ID},
		{"copy", n.Copy, item.Question},
		{"run_id", n.RunID, res.RunID},
		{"kind", n.Kind, "approval"},
		{"show", n.Show, "oa attention show " + item.ID},
	} {
		if f.got != f.want {
			t.Errorf("webhook body's %s = %q, want %q", f.name, f.got, f.want)
		}
	}
	env := waitFile(t, out)
	for _, line := range []string{"OA_ATTENTION_ID=" + item.ID + "\n", "OA_ATTENTION_COPY=" + item.Question + "\n", "OA_DEPLOYMENT=clinic\n"} {
		if !strings.Contains(env, line) {
			t.Errorf("the command's environment has no line %q:\n%s", line, env)
		}
	}
	for _, leak := range []string{"AB-1234", "Planted-Notify", "[triage:"} {
		if strings.Contains(env, leak) {
			t.Errorf("the command's environment carries %q:\n%s", leak, env)
		}
		if strings.Contains(body, leak) {
			t.Errorf("the webhook body carries %q:\n%s", leak, body)
		}
	}
	for !strings.Contains(operator.String(), "attention "+item.ID+": the notify command failed (exit status 3)") {
		time.Sleep(10 * time.Millisecond) // the command ran (its file is there) and is ending
	}
	if strings.Contains(operator.String(), "token=x") {
		t.Errorf("the operator log carries the webhook's token:\n%s", operator)
	}
	if strings.Contains(operator.String(), "notify webhook failed") {
		t.Errorf("the operator log says the webhook failed:\n%s", operator)
	}
}

// waitFile waits for path to be written whole (renamed into place) and
// returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
