package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/coordinator/mcpserve"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// These tests drive `oa coordinator serve` as a real stdio subprocess with
// the go-sdk client (testkit/servetest), against real hosts:
// nothing is mocked.

func TestServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as a subprocess")
	}
	oa := func(t *testing.T) string { t.Parallel(); return servetest.Binary(t) } // each case has its own host and subprocess
	t.Run("ToolsList", func(t *testing.T) { testServerToolsList(t, oa(t)) })
	t.Run("SandboxOutcomes", func(t *testing.T) { testServerSandboxOutcomes(t, oa(t)) })
	t.Run("ApprovalByElicitation", func(t *testing.T) { testServerApprovalByElicitation(t, oa(t)) })
	t.Run("RequestStateForgedReplayed", func(t *testing.T) { testServerRequestState(t, oa(t)) })
	t.Run("NoElicitationCannotApprove", func(t *testing.T) { testServerNoElicitation(t, oa(t)) })
	t.Run("NothingLeaks", func(t *testing.T) { testServerNothingLeaks(t, oa(t)) })
	t.Run("RefusedAtSessionStart", func(t *testing.T) { testServerRefusedAtStart(t, oa(t)) })
}

func testServerToolsList(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	c := h.Connect(t, servetest.ClientOptions{})
	names := make([]string, 0, len(c.Tools))
	for n := range c.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	wantNames := append(slices.Clone(contract.CoordinatorTools), "records_read")
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("tools = %v, want exactly %v", names, wantNames)
	}
	// The read tool's name has no dots; it names its capability.
	if rt := c.Tools["records_read"]; !strings.Contains(rt.Description, "records.read") || rt.Annotations.Title != "Read records.read" || rt.Meta[mcpserve.MetaCapability] != "records.read" {
		t.Errorf("records_read does not name capability records.read: %q %q %v", rt.Description, rt.Annotations.Title, rt.Meta)
	}
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	wantHints := map[string]hints{
		contract.ToolListWorkflows:      {true, false, true, false},
		contract.ToolGetRun:             {true, false, true, false},
		contract.ToolListNeedsAttention: {true, false, true, false},
		contract.ToolGetAttentionItem:   {true, false, true, false},
		contract.ToolRunWorkflow:        {false, true, true, true},
		contract.ToolDecide:             {false, true, false, false},
		"records_read":                  {true, false, true, true},
	}
	for _, name := range names {
		tool := c.Tools[name]
		if !regexp.MustCompile(contract.ToolNamePattern).MatchString(name) {
			t.Errorf("tool %q is not a name every MCP client accepts (%s)", name, contract.ToolNamePattern)
		}
		if strings.TrimSpace(tool.Description) == "" || tool.InputSchema == nil || tool.OutputSchema == nil || tool.Annotations == nil {
			t.Fatalf("%s: description, schemas and annotations are required: %+v", name, tool)
		}
		a := tool.Annotations
		got := hints{a.ReadOnlyHint, a.DestructiveHint != nil && *a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint != nil && *a.OpenWorldHint}
		if a.DestructiveHint == nil || a.OpenWorldHint == nil || got != wantHints[name] {
			t.Errorf("%s: annotations %+v, want %+v", name, got, wantHints[name])
		}
		for what, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			var m map[string]any
			b, _ := json.Marshal(schema)
			_ = json.Unmarshal(b, &m)
			if m["type"] != "object" || m["additionalProperties"] != false {
				t.Errorf("%s: %s schema is not a closed object: %s", name, what, b)
			}
		}
	}
	// The result schema's enums are exactly the closed sets.
	var rs struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
		OneOf    []any    `json:"oneOf"`
	}
	b, _ := json.Marshal(c.Tools[contract.ToolRunWorkflow].OutputSchema)
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	var reasons, outcomes []string
	for _, r := range contract.Reasons {
		reasons = append(reasons, string(r.Reason))
	}
	for _, o := range contract.Outcomes {
		outcomes = append(outcomes, string(o.Outcome))
	}
	if !slices.Equal(rs.Properties["reason"].Enum, reasons) || !slices.Equal(rs.Properties["outcome"].Enum, outcomes) ||
		!slices.Equal(rs.Properties["proof"].Enum, contract.ProofValues) || !slices.Equal(rs.Properties["record_changed"].Enum, contract.RecordChangedValues) ||
		len(rs.OneOf) != len(contract.Reasons) {
		t.Fatalf("result schema enums: %s", b)
	}
	var in struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Default, Maximum any
		} `json:"properties"`
	}
	b, _ = json.Marshal(c.Tools[contract.ToolRunWorkflow].InputSchema)
	_ = json.Unmarshal(b, &in)
	if !slices.Contains(in.Required, "request_id") || in.Properties["wait_seconds"].Default != float64(60) || in.Properties["wait_seconds"].Maximum != float64(600) {
		t.Fatalf("run_workflow input schema: %s", b)
	}
	// Every reason's result validates, and a result breaking its reason's
	// contract does not.
	out := c.Outputs[contract.ToolRunWorkflow]
	for _, r := range contract.Reasons {
		res := coordinator.Result{RunID: "run-x", RequestID: "req-1", Workflow: "w", Outcome: r.Outcome, Reason: r.Reason, SafeToRetry: r.SafeToRetry,
			RecordChanged: r.RecordChanged, Proof: contract.ProofLocal, WhatHappened: r.WhatHappened, NextAction: r.NextAction, Evidence: []string{}}
		var v any
		b, _ := json.Marshal(res)
		_ = json.Unmarshal(b, &v)
		if err := out.Validate(v); err != nil {
			t.Errorf("reason %s: %v", r.Reason, err)
		}
		res.SafeToRetry = !res.SafeToRetry
		b, _ = json.Marshal(res)
		_ = json.Unmarshal(b, &v)
		if out.Validate(v) == nil {
			t.Errorf("reason %s: a result with the wrong safe_to_retry validates", r.Reason)
		}
	}
	wf, _ := c.Call(contract.ToolListWorkflows, map[string]any{})
	if ws, _ := wf["workflows"].([]any); len(ws) != 1 || ws[0].(map[string]any)["name"] != "append_triage_note" {
		t.Fatalf("list_workflows: %v", wf)
	}
}

func testServerSandboxOutcomes(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	c := h.Connect(t, servetest.ClientOptions{})
	cases := []struct {
		record  string
		outcome contract.Outcome
		reason  contract.Reason
	}{
		{"AB-1234", contract.OutcomeDone, contract.ReasonVerified},
		{"DU-0001", contract.OutcomeNeedsReview, contract.ReasonDuplicateRecord},
		{"FS-0001", contract.OutcomeNotSureIfSaved, contract.ReasonNotConfirmed},
		{"TO-0001", contract.OutcomeNotSureIfSaved, contract.ReasonEffectTimeout},
		{"OF-0001", contract.OutcomeDidNotRun, contract.ReasonAppOffline},
		{"CL-0001", contract.OutcomeDidNotRun, contract.ReasonGuardFailed},
	}
	runs := map[string]string{}
	for _, k := range cases {
		res := c.Run("req-"+k.record, triage(k.record, "Persistent cough, three days."))
		want(t, k.record, res, k.outcome, k.reason)
		if res["replayed"] != false {
			t.Fatalf("%s: first answer replayed", k.record)
		}
		runs[k.record] = res["run_id"].(string)
	}
	done := c.Run("req-AB-1234", triage("AB-1234", "Persistent cough, three days."))
	want(t, "replay", done, contract.OutcomeDone, contract.ReasonVerified)
	if done["replayed"] != true || done["run_id"] != runs["AB-1234"] || done["proof"] != contract.ProofSealed {
		t.Fatalf("replay: %v", done)
	}
	conflict := c.Run("req-AB-1234", triage("AB-1234", "Something else."))
	want(t, "conflict", conflict, contract.OutcomeDidNotRun, contract.ReasonRequestIDConflict)

	got, _ := c.Call(contract.ToolGetRun, map[string]any{"run_id": runs["FS-0001"], "wait_seconds": 0})
	want(t, "get_run", got, contract.OutcomeNotSureIfSaved, contract.ReasonNotConfirmed)
	if _, code := c.Call(contract.ToolGetRun, map[string]any{"run_id": "run-nope"}); code != string(blocking.RunUnknown) {
		t.Fatalf("get_run of an unknown run: %q", code)
	}
	if _, code := c.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", "x")}); code != "arguments_invalid" {
		t.Fatalf("run_workflow without request_id: %q", code)
	}
	if _, code := c.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", "x"), "request_id": "r-w", "wait_seconds": 601}); code != "arguments_invalid" {
		t.Fatalf("run_workflow with wait_seconds 601: %q", code)
	}
	bad := c.Run("req-bad", map[string]any{"record_ref": "nope"})
	want(t, "invalid inputs", bad, contract.OutcomeDidNotRun, contract.ReasonInvalidInputs)
	read, code := c.Call("records_read", map[string]any{"record": "AB-1234"})
	if read["outcome"] != "done" || read["capability"] != "records.read" {
		t.Fatalf("records_read: %v %s", read, code)
	}
	if notes := read["content"].(map[string]any)["notes"].([]any); len(notes) != 1 {
		t.Fatalf("records.read notes: %v", notes)
	}
	offline, _ := c.Call("records_read", map[string]any{"record": "OF-0001"})
	if offline["outcome"] != "did_not_run" || offline["content"] != nil {
		t.Fatalf("records.read offline: %v", offline)
	}
	items, _ := c.Call(contract.ToolListNeedsAttention, map[string]any{})
	if l := items["items"].([]any); len(l) != 0 {
		t.Fatalf("attention without approvals: %v", l)
	}
}

func approveAll(decision string) func(*mcp.ElicitRequest) *mcp.ElicitResult {
	return func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
	}
}

func testServerApprovalByElicitation(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, servetest.ApprovalRegistry())
	for _, protocol := range []string{"", "2025-11-25"} {
		c := h.Connect(t, servetest.ClientOptions{Answer: approveAll("approve"), Protocol: protocol})
		id := "req-approve-" + protocol
		res := c.Run(id, triage("AB-1234", "Approved by the person."))
		want(t, "approved run "+protocol, res, contract.OutcomeDone, contract.ReasonVerified)
		// The form's fixed copy names the step; the call it shows after it
		// is the note the step would write, word for word.
		if len(c.Asked()) != 1 || !strings.Contains(c.Asked()[0], `"append_triage_note"`) || !strings.Contains(c.Asked()[0], `"append_note"`) || !strings.Contains(c.Asked()[0], `"records.note.append"`) ||
			strings.Contains(strings.Split(c.Asked()[0], formCallMarker)[0], "Approved by") || !strings.Contains(c.Asked()[0], formCallMarker+"{\n  \"record\": \"AB-1234\",\n  \"text\": \"[triage:soon] Approved by the person.\"\n}") {
			t.Fatalf("elicitation (protocol %q): %q", protocol, c.Asked())
		}
		all, err := coordinator.AttentionRecords(h.Open()).List(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, it := range all {
			if it.RunID == res["run_id"] {
				found = it.State == attention.Approved && it.Channel == mcpserve.ChannelElicitation && it.DecidedBy == mcpserve.ByElicitation
			}
		}
		if !found {
			t.Fatalf("the approval is not recorded as an elicitation: %+v", all)
		}
		// Replaying the request does not ask again or repeat the change.
		again := c.Run(id, triage("AB-1234", "Approved by the person."))
		if again["replayed"] != true || again["outcome"] != "done" || len(c.Asked()) != 1 {
			t.Fatalf("replay after approval: %v (asked %d)", again, len(c.Asked()))
		}
	}
	rejecting := h.Connect(t, servetest.ClientOptions{Answer: approveAll("reject")})
	want(t, "rejected run", rejecting.Run("req-reject", triage("CD-5678", "Rejected.")), contract.OutcomeDidNotRun, contract.ReasonRejected)
	declining := h.Connect(t, servetest.ClientOptions{Answer: func(*mcp.ElicitRequest) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }})
	paused := declining.Run("req-decline", triage("CD-5678", "Declined."))
	want(t, "declined form", paused, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)
	if len(declining.Asked()) != 1 {
		t.Fatalf("a declined form was asked %d times", len(declining.Asked()))
	}
	// The agent asks to approve: the person is asked, and decides.
	item, _ := declining.Call(contract.ToolGetAttentionItem, map[string]any{"attention_id": paused["attention_id"]})
	if item["state"] != "open" || item["step"] != "append_note" {
		t.Fatalf("attention item: %v", item)
	}
	approver := h.Connect(t, servetest.ClientOptions{Answer: approveAll("approve")})
	decided, code := approver.Call(contract.ToolDecide, map[string]any{"attention_id": paused["attention_id"], "decision": "approve"})
	if code != "" || decided["attention_item"].(map[string]any)["state"] != "approved" || len(approver.Asked()) != 1 {
		t.Fatalf("decide approve with elicitation: %v %q", decided, code)
	}
	want(t, "resumed", approver.Run("req-decline", triage("CD-5678", "Declined.")), contract.OutcomeDone, contract.ReasonVerified)
}

func testServerRequestState(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, servetest.ApprovalRegistry())
	c := h.Connect(t, servetest.ClientOptions{Answer: approveAll("approve"), NoMRTR: true})
	args := map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", "State test."), "request_id": "req-state", "wait_seconds": 30}
	approve := mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}}

	// Made-up input responses on a first call are never trusted.
	res, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args, InputResponses: approve})
	if _, code := c.Check(contract.ToolRunWorkflow, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
		t.Fatalf("input responses without a state: %q", code)
	}
	first, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args})
	if err != nil || !first.NeedsInput() || first.RequestState == "" || first.InputRequests["approval"] == nil {
		t.Fatalf("want an input-required result: %+v %v", first, err)
	}
	token := first.RequestState
	forged := []string{
		token[:len(token)-2] + flip(token[len(token)-2:]),                               // signature changed
		flip(token[:2]) + token[2:],                                                     // payload changed
		"eyJ2Ijp7InRvb2wiOiJydW5fd29ya2Zsb3cifSwiZXhwIjo5OTk5OTk5OTk5LCJuIjoieCJ9.AAAA", // made up
	}
	for _, f := range forged {
		res, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args, InputResponses: approve, RequestState: f})
		if _, code := c.Check(contract.ToolRunWorkflow, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
			t.Fatalf("forged state: %q", code)
		}
	}
	// A valid state for other inputs is refused (and used up).
	other := map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", "Other inputs."), "request_id": "req-state", "wait_seconds": 30}
	res, err = c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: other, InputResponses: approve, RequestState: token})
	if _, code := c.Check(contract.ToolRunWorkflow, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
		t.Fatalf("state carried to other inputs: %q", code)
	}
	items, _ := c.Call(contract.ToolListNeedsAttention, map[string]any{})
	if l := items["items"].([]any); len(l) != 1 || l[0].(map[string]any)["state"] != "open" {
		t.Fatalf("a refused answer decided the item: %v", l)
	}
	// A fresh state, answered once: done. Answered again: refused.
	second, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args})
	if err != nil || !second.NeedsInput() {
		t.Fatalf("want a fresh input-required result: %+v %v", second, err)
	}
	res, err = c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args, InputResponses: approve, RequestState: second.RequestState})
	done, _ := c.Check(contract.ToolRunWorkflow, mustRes(t, res, err))
	want(t, "approved with a valid state", done, contract.OutcomeDone, contract.ReasonVerified)
	res, err = c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: args, InputResponses: approve, RequestState: second.RequestState})
	if _, code := c.Check(contract.ToolRunWorkflow, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
		t.Fatalf("replayed state: %q", code)
	}
	// A state made for run_workflow does not decide through
	// decide_attention_item.
	third, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "inputs": triage("CD-5678", "x"), "request_id": "req-state-2"}})
	if err != nil || !third.NeedsInput() {
		t.Fatalf("want an input-required result: %+v %v", third, err)
	}
	items, _ = c.Call(contract.ToolListNeedsAttention, map[string]any{})
	att := items["items"].([]any)[0].(map[string]any)["attention_id"]
	res, err = c.Raw(&mcp.CallToolParams{Name: contract.ToolDecide, Arguments: map[string]any{"attention_id": att, "decision": "approve"}, InputResponses: approve, RequestState: third.RequestState})
	if _, code := c.Check(contract.ToolDecide, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
		t.Fatalf("state used by another tool: %q", code)
	}
}

func mustRes(t *testing.T, res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	t.Helper()
	if err != nil {
		t.Fatalf("protocol error: %v", err)
	}
	return res
}

func flip(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

func testServerNoElicitation(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, servetest.ApprovalRegistry())
	c := h.Connect(t, servetest.ClientOptions{})
	paused := c.Run("req-paused", triage("AB-1234", "Waits for a person."))
	want(t, "paused", paused, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)
	att := paused["attention_id"].(string)
	if _, code := c.Call(contract.ToolDecide, map[string]any{"attention_id": att, "decision": "approve"}); code != "approval_needs_person" {
		t.Fatalf("approve without elicitation: %q", code)
	}
	// Made-up input responses do not approve either.
	res, err := c.Raw(&mcp.CallToolParams{Name: contract.ToolDecide, Arguments: map[string]any{"attention_id": att, "decision": "approve"},
		InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}}})
	if _, code := c.Check(contract.ToolDecide, mustRes(t, res, err)); code != string(blocking.RequestStateInvalid) {
		t.Fatalf("made-up approval: %q", code)
	}
	still := c.Run("req-paused", triage("AB-1234", "Waits for a person."))
	want(t, "still paused", still, contract.OutcomeNeedsReview, contract.ReasonApprovalRequired)

	// The operator approves from the CLI; the caller resumes the run.
	cli := exec.Command(oa, "attention", "approve", att, "--as", "Dr Ada")
	cli.Env = append(os.Environ(), "OA_HOME="+h.Home)
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("oa attention approve: %v\n%s", err, out)
	}
	want(t, "resumed after CLI approval", c.Run("req-paused", triage("AB-1234", "Waits for a person.")), contract.OutcomeDone, contract.ReasonVerified)

	// Reject and escalate are relayed.
	second := c.Run("req-reject", triage("CD-5678", "Rejected by the agent."))
	d, code := c.Call(contract.ToolDecide, map[string]any{"attention_id": second["attention_id"], "decision": "reject"})
	if code != "" || d["attention_item"].(map[string]any)["state"] != "rejected" {
		t.Fatalf("reject: %v %q", d, code)
	}
	got, _ := c.Call(contract.ToolGetRun, map[string]any{"run_id": second["run_id"], "wait_seconds": 0})
	want(t, "rejected run", got, contract.OutcomeDidNotRun, contract.ReasonRejected)
	if _, code := c.Call(contract.ToolDecide, map[string]any{"attention_id": second["attention_id"], "decision": "escalate"}); code != string(blocking.AttentionDecided) {
		t.Fatalf("deciding twice: %q", code)
	}
	third := c.Run("req-escalate", triage("CD-5678", "Escalated."))
	if d, code := c.Call(contract.ToolDecide, map[string]any{"attention_id": third["attention_id"], "decision": "escalate"}); code != "" || d["attention_item"].(map[string]any)["state"] != "escalated" {
		t.Fatalf("escalate: %v %q", d, code)
	}
	if _, code := c.Call(contract.ToolGetAttentionItem, map[string]any{"attention_id": "att-nope"}); code != string(blocking.AttentionUnknown) {
		t.Fatalf("unknown attention item: %q", code)
	}
}

func testServerNothingLeaks(t *testing.T, oa string) {
	h := servetest.NewHost(t, oa, servetest.ApprovalRegistry())
	const secret = "sk_live_9Qm2Zx7LwPa4Rt8Vn3Kc"
	path := h.Home
	c := h.Connect(t, servetest.ClientOptions{Answer: approveAll("approve")})
	plain := h.Connect(t, servetest.ClientOptions{})
	summaries := []string{secret, "see " + path + "/keys/host.key " + secret}
	for i, s := range summaries {
		for _, record := range []string{"AB-1234", "DU-0001", "FS-0001", "OF-0001", "CL-0001"} {
			c.Run(fmt.Sprintf("leak-%d-%s", i, record), triage(record, s))
			plain.Run(fmt.Sprintf("leak-plain-%d-%s", i, record), triage(record, s))
		}
	}
	for _, cl := range []*servetest.Client{c, plain} {
		cl.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": triage(secret, secret), "request_id": "leak-invalid"})
		cl.Call(contract.ToolRunWorkflow, map[string]any{"workflow": secret, "inputs": triage("AB-1234", secret), "request_id": "leak-unknown"})
		cl.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", secret), "request_id": path})
		cl.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": map[string]any{"record_ref": "AB-1234", "extra": secret}, "request_id": "leak-extra"})
		cl.Call(contract.ToolRunWorkflow, map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", secret), "request_id": "bad id " + secret})
		cl.Call(contract.ToolGetRun, map[string]any{"run_id": secret})
		cl.Call(contract.ToolGetRun, map[string]any{"run_id": path})
		cl.Call(contract.ToolGetAttentionItem, map[string]any{"attention_id": secret})
		cl.Call(contract.ToolDecide, map[string]any{"attention_id": secret, "decision": "reject"})
		cl.Call(contract.ToolDecide, map[string]any{"attention_id": secret, "decision": secret})
		cl.Call("records_read", map[string]any{"record": secret})
		cl.Call("records_read", map[string]any{"record": "OF-0001"})
		cl.Call(contract.ToolListNeedsAttention, map[string]any{})
		cl.Call(contract.ToolListWorkflows, map[string]any{})
		cl.Raw(&mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{"workflow": "append_triage_note", "inputs": triage("AB-1234", secret), "request_id": "leak-state"}, RequestState: secret + "." + secret})
	}
	shownInForm := false
	for _, cl := range []*servetest.Client{c, plain} {
		if len(cl.Seen()) < 20 {
			t.Fatalf("only %d answers seen", len(cl.Seen()))
		}
		// A form shows the person the call it asks about, arguments and
		// all (the person at the client is inside the boundary): only
		// there, never in its fixed copy, a tool result or the
		// operator's channel.
		var forms []string
		for _, s := range cl.Asked() {
			fixed, call, _ := strings.Cut(s, formCallMarker)
			forms = append(forms, fixed)
			if strings.Contains(call, secret) {
				shownInForm = true
			}
		}
		for _, s := range append(append(cl.Seen(), forms...), cl.Stderr.String()) {
			for _, bad := range []string{secret, secret[:12], path, filepath.Dir(path)} {
				if strings.Contains(s, bad) {
					t.Fatalf("a result the client saw holds %q:\n%s", bad, s)
				}
			}
		}
	}
	if !shownInForm {
		t.Fatal("no approval form showed the person the note the step would write")
	}
}

// formCallMarker begins the call an approval form shows.
const formCallMarker = "these arguments, exactly as they will be sent:\n"

func testServerRefusedAtStart(t *testing.T, oa string) {
	h := &servetest.Host{Host: hosttest.New(t, nil), OA: oa}
	cmd := exec.Command(oa, "coordinator", "serve", "--deployment", "clinic")
	cmd.Env = append(os.Environ(), "OA_HOME="+h.Home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), string(blocking.BindingMissing)) {
		t.Fatalf("serve without a binding: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
}
