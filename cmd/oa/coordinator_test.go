package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// coordinatorHost is a bound clinic deployment on the sandbox connector
// with records.note.append needing a person's approval, as $OA_HOME.
func coordinatorHost(t *testing.T, approval bool) *hosttest.Host {
	t.Helper()
	h := hosttest.New(t, nil)
	reg := resolve.StarterRegistry(hosttest.Name)
	if approval {
		reg = strings.Replace(reg, `description: "Append one note to a record."`, `description: "Append one note to a record."`+"\n\t\tapproval:    \"required\"", 1)
	}
	h.WriteRegistry(reg)
	host := h.Open()
	h.AddConnection(host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	h.Bind(host, "claude-test")
	t.Setenv("OA_HOME", h.Home)
	return h
}

func runClinic(t *testing.T, c *coordinator.Coordinator, requestID, record string) *coordinator.Result {
	t.Helper()
	res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: requestID, Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"` + record + `","urgency":"soon","summary":"Cough."}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func openCoordinator(t *testing.T, h *hosttest.Host) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func cliOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("oa %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func cliRefused(t *testing.T, code string, args ...string) (string, string) {
	t.Helper()
	out, errOut, status := runCLI(t, args...)
	what := "oa " + strings.Join(args, " ")
	wantExit(t, what, status, 2, out, errOut)
	wantHas(t, what, errOut, code)
	return out, errOut
}

func TestCoordinatorServeRefusesAtSessionStart(t *testing.T) {
	h := hosttest.New(t, nil)
	t.Setenv("OA_HOME", h.Home)
	out, _ := cliRefused(t, "binding_missing", "coordinator", "serve", "--deployment", "clinic")
	if out != "" {
		t.Fatalf("a refused serve wrote to stdout: %q", out)
	}
}

func TestCoordinatorServeRevokedRelease(t *testing.T) {
	h := coordinatorHost(t, false)
	cliOK(t, "revoke", strings.SplitN(h.Ref, "@", 2)[1], "--reason", "withdrawn", "--as", "Dr Ada")
	out, errOut := cliRefused(t, "admission_not_active", "coordinator", "serve", "--deployment", "clinic")
	if out != "" {
		t.Errorf("serve of a revoked release: stdout %q, want none", out)
	}
	wantHas(t, "serve of a revoked release", errOut, "revoked")
}

func TestAttentionCLI(t *testing.T) {
	h := coordinatorHost(t, true)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-1", "AB-1234")
	if paused.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("run reason = %q, want %q (a paused run)", paused.Reason, contract.ReasonApprovalRequired)
	}
	if paused.AttentionID == "" {
		t.Fatalf("paused run has no attention id: %+v", paused)
	}
	second := runClinic(t, c, "req-2", "CD-5678")

	var items []attention.Item
	wantJSON(t, "attention list --json", cliOK(t, "attention", "list", "--json"), &items)
	if len(items) != 2 {
		t.Fatalf("attention list --json: %d items, want 2: %+v", len(items), items)
	}
	text := cliOK(t, "attention", "list")
	wantHas(t, "attention list", text, paused.AttentionID, "append_note")
	wantLacks(t, "attention list", text, "Cough")
	wantHas(t, "attention show", cliOK(t, "attention", "show", paused.AttentionID), "records.note.append", "open")
	cliRefused(t, "name the person deciding", "attention", "approve", paused.AttentionID)
	cliRefused(t, "attention_unknown", "attention", "approve", "att-nope", "--as", "Dr Ada")
	var it attention.Item
	wantJSON(t, "attention approve", cliOK(t, "attention", "approve", paused.AttentionID, "--as", "Dr Ada", "--json"), &it)
	if it.State != attention.Approved {
		t.Errorf("attention approve: state = %q, want %q", it.State, attention.Approved)
	}
	if it.DecidedBy != "Dr Ada" {
		t.Errorf("attention approve: decided by %q, want Dr Ada", it.DecidedBy)
	}
	if it.Channel != "cli" {
		t.Errorf("attention approve: channel = %q, want cli", it.Channel)
	}
	if t.Failed() {
		t.FailNow()
	}
	cliRefused(t, "attention_decided", "attention", "reject", paused.AttentionID, "--as", "Dr Ada")
	if res := runClinic(t, c, "req-1", "AB-1234"); res.Outcome != contract.OutcomeDone {
		t.Fatalf("resumed after the CLI approval: %+v", res)
	}
	cliOK(t, "attention", "escalate", second.AttentionID, "--as", "Dr Ada")
	cliOK(t, "attention", "reject", second.AttentionID, "--as", "Dr Bea")
	wantJSON(t, "attention list --json after deciding", cliOK(t, "attention", "list", "--json"), &items)
	if len(items) != 0 {
		t.Fatalf("open items after deciding: %d, want 0: %+v", len(items), items)
	}
	wantJSON(t, "attention list --all", cliOK(t, "attention", "list", "--all", "--json"), &items)
	if len(items) != 2 {
		t.Fatalf("attention list --all: %d items, want 2: %+v", len(items), items)
	}
}

func TestAttentionSkipAndTeachCLI(t *testing.T) {
	h := coordinatorHost(t, true)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-1", "AB-1234")
	// append_note is a consequential effect: never skippable.
	cliRefused(t, "skip_not_declared", "attention", "skip", paused.AttentionID, "--as", "Dr Ada")
	if out := cliOK(t, "explain", "skip_not_declared"); !strings.Contains(out, "skippable_while") {
		t.Fatalf("explain skip_not_declared:\n%s", out)
	}
	cliRefused(t, "teach_text_invalid", "attention", "teach", paused.AttentionID, "--as", "Dr Ada", "--text", "Call +44 20 7946 0958 first.")
	cliRefused(t, "teach_text_invalid", "attention", "teach", paused.AttentionID, "--as", "Dr Ada", "--text", "a", "--text-file", "x")
	file := filepath.Join(t.TempDir(), "teach.txt")
	if err := os.WriteFile(file, []byte("Ask for the ward before the note.\nIt saves a call."), 0o600); err != nil {
		t.Fatal(err)
	}
	var it attention.Item
	wantJSON(t, "attention teach", cliOK(t, "attention", "teach", paused.AttentionID, "--as", "Dr Ada", "--text-file", file, "--json"), &it)
	if it.State != attention.Open {
		t.Fatalf("attention teach: state = %q, want %q", it.State, attention.Open)
	}
	if it.TeachRequests != 1 {
		t.Fatalf("attention teach: %d teach requests, want 1", it.TeachRequests)
	}
	wantHas(t, "attention show (the teach request)", cliOK(t, "attention", "show", paused.AttentionID), "Ask for the ward", "teach")
	var shown struct {
		State string                         `json:"state"`
		Teach []attention.SignedTeachRequest `json:"teach"`
	}
	wantJSON(t, "attention show --json", cliOK(t, "attention", "show", paused.AttentionID, "--json"), &shown)
	if shown.State != "open" {
		t.Fatalf("attention show --json: state = %q, want open", shown.State)
	}
	if len(shown.Teach) != 1 {
		t.Fatalf("attention show --json: %d teach requests, want 1: %+v", len(shown.Teach), shown.Teach)
	}
	if by := shown.Teach[0].Request.By; by != "Dr Ada" {
		t.Fatalf("attention show --json: teach request by %q, want Dr Ada", by)
	}
	if res := runClinic(t, c, "req-1", "AB-1234"); res.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("the pause changed after a teach request: %+v", res)
	}
}

func TestReceiptsCLI(t *testing.T) {
	h := coordinatorHost(t, false)
	if out := cliOK(t, "receipts", "verify"); !strings.Contains(out, "0 receipts") {
		t.Fatalf("verify of an empty chain: %s", out)
	}
	c := openCoordinator(t, h)
	for i, record := range []string{"AB-1234", "OF-0001", "CL-0001"} {
		runClinic(t, c, "req-"+string(rune('a'+i)), record)
	}
	var report ledger.ChainReport
	wantJSON(t, "receipts verify --json", cliOK(t, "receipts", "verify", "--json"), &report)
	if !report.OK {
		t.Fatalf("receipts verify --json: ok = false, want true: %+v", report)
	}
	if report.Receipts != 3 {
		t.Fatalf("receipts verify --json: %d receipts, want 3", report.Receipts)
	}
	var list []struct {
		Digest string         `json:"digest"`
		Record ledger.Receipt `json:"record"`
	}
	wantJSON(t, "receipts list --json", cliOK(t, "receipts", "list", "--json"), &list)
	if len(list) != 3 {
		t.Fatalf("receipts list --json: %d receipts, want 3: %+v", len(list), list)
	}
	if list[1].Record.Prev != list[0].Digest {
		t.Errorf("receipts list --json: second receipt's prev = %q, want the first's digest %q", list[1].Record.Prev, list[0].Digest)
	}
	if list[0].Record.Outcome != contract.OutcomeDone {
		t.Errorf("receipts list --json: first outcome = %q, want %q", list[0].Record.Outcome, contract.OutcomeDone)
	}
	if t.Failed() {
		t.FailNow()
	}
	text := cliOK(t, "receipts", "list")
	wantHas(t, "receipts list", text, "app_offline")
	wantLacks(t, "receipts list", text, "Cough")

	// Someone with the database file drops the guard and changes receipt
	// #2: verify names it.
	db, err := sql.Open("sqlite", filepath.Join(h.Home, host.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rec []byte
	if err := db.QueryRow(`SELECT record FROM receipts WHERE seq = 2`).Scan(&rec); err != nil {
		t.Fatal(err)
	}
	rec = bytes.Replace(store.Unpack(rec), []byte(`"did_not_run"`), []byte(`"done"`), 1)
	if _, err := db.Exec(`DROP TRIGGER receipts_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE receipts SET record = ? WHERE seq = 2`, rec); err != nil {
		t.Fatal(err)
	}
	out, errOut := cliRefused(t, "receipt_chain_broken", "receipts", "verify")
	wantHas(t, "verify of a changed chain (stdout)", out, "receipt #2")
	wantHas(t, "verify of a changed chain (stderr)", errOut, "#2")
	out, _ = cliRefused(t, "receipt_chain_broken", "receipts", "verify", "--json")
	wantJSON(t, "receipts verify --json of a changed chain", out, &report)
	if report.OK {
		t.Errorf("receipts verify --json of a changed chain: ok = true, want false")
	}
	if report.FirstBroken != 2 {
		t.Errorf("receipts verify --json of a changed chain: first broken = %d, want 2", report.FirstBroken)
	}
}

// TestCoordinatorInspectorCLI lists the tools with the stock MCP Inspector
// CLI (npm @modelcontextprotocol/inspector, at the version
// interoptest/inspector/package-lock.json pins, installed once into the
// interop cache), which offers no elicitation. Every served name must be
// one every MCP client accepts.
func TestCoordinatorInspectorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP Inspector and builds oa")
	}
	inspector := interoptest.Inspector(t)
	h := coordinatorHost(t, false)
	bin := oaBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inspector, "--cli", bin, "coordinator", "serve", "--deployment", "clinic", "--method", "tools/list")
	cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var listed struct {
		Tools []struct {
			Name         string         `json:"name"`
			Description  string         `json:"description"`
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &listed); err != nil {
		t.Fatalf("inspector output: %v\n%s", err, stdout.String())
	}
	var names []string
	for _, tool := range listed.Tools {
		if tool.Description == "" {
			t.Errorf("%s: no description in the inspector's list", tool.Name)
		}
		if tool.InputSchema == nil {
			t.Errorf("%s: no input schema in the inspector's list", tool.Name)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema in the inspector's list", tool.Name)
		}
		if !regexp.MustCompile(contract.ToolNamePattern).MatchString(tool.Name) {
			t.Errorf("tool %q is not a name every MCP client accepts (%s)", tool.Name, contract.ToolNamePattern)
		}
		names = append(names, tool.Name)
	}
	wantNames := append(slices.Clone(contract.CoordinatorTools), "records_read")
	slices.Sort(names)
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("inspector lists %v, want %v", names, wantNames)
	}
}

// TestCoordinatorServeSandboxMode: with no deployment, serve prepares the
// built-in demo host under $OA_HOME/demo on first use and serves the demo
// package on the sandbox connector, saying so (mode "sandbox").
func TestCoordinatorServeSandboxMode(t *testing.T) {
	home := t.TempDir()
	for _, round := range []string{"first", "again"} {
		server := exec.Command(oaBinary(t), "coordinator", "serve")
		server.Env = append(os.Environ(), "OA_HOME="+home)
		client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", round, err)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolListWorkflows, Arguments: map[string]any{}})
		var listed struct {
			Mode string `json:"mode"`
		}
		if err != nil {
			t.Fatalf("%s: list_workflows: %v", round, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		wantJSON(t, round+": list_workflows", string(b), &listed)
		if listed.Mode != coordinator.ModeSandbox {
			t.Fatalf("%s: list_workflows mode = %q, want %q", round, listed.Mode, coordinator.ModeSandbox)
		}
		run, err := session.CallTool(ctx, &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
			"workflow": "append_triage_note", "request_id": "sandbox-" + round,
			"inputs": map[string]any{"record_ref": "AB-1234", "urgency": "routine", "summary": "Sandbox mode note."},
		}})
		if err != nil {
			t.Fatalf("%s: run_workflow: %v", round, err)
		}
		b, _ = json.Marshal(run.StructuredContent)
		wantHas(t, round+": run_workflow", string(b), `"outcome":"done"`)
		session.Close()
		cancel()
	}
}
