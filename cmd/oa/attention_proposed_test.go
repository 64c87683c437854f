package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oa-dev/oa/contract"
)

// TestAttentionShowsProposedChange: `oa attention show` of a run paused
// before an approval-required effect prints what the person decides on:
// the workflow's purpose and what done means, the exact call the step
// would send (connection, tool, the record and the note's text as they
// will be sent) and what the run read before it; --json carries the same.
// Listing the items shows none of it.
func TestAttentionShowsProposedChange(t *testing.T) {
	h := coordinatorHost(t, true)
	c := openCoordinator(t, h)
	paused := runClinic(t, c, "req-1", "AB-1234")
	if paused.Reason != contract.ReasonApprovalRequired {
		t.Fatalf("run reason = %q, want %q (a paused run)", paused.Reason, contract.ReasonApprovalRequired)
	}
	if paused.AttentionID == "" {
		t.Fatalf("paused run has no attention id: %+v", paused)
	}
	show := cliOK(t, "attention", "show", paused.AttentionID)
	for _, want := range []string{
		"Append a triage note to an open clinic record.",           // purpose
		"The note is on the record, read back with the same text.", // done means
		"connection sandbox", "tool append_note", `"record": "AB-1234"`, // the call
		`"text": "[triage:soon] Cough."`,             // the note, exactly as it will be sent
		"step load_record read:", `"status": "open"`, // what the run read
		"hmac-sha256:",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("attention show lacks %q:\n%s", want, show)
		}
	}
	var shown struct {
		State      string `json:"state"`
		CallDigest string `json:"call_digest"`
		Proposed   struct {
			Purpose   string `json:"purpose"`
			DoneMeans string `json:"done_means"`
			Call      struct {
				Connection string          `json:"connection"`
				Tool       string          `json:"tool"`
				Arguments  json.RawMessage `json:"arguments"`
			} `json:"call"`
			Read map[string]json.RawMessage `json:"read"`
		} `json:"proposed_change"`
		Sealed any `json:"proposed_sealed"`
	}
	if err := json.Unmarshal([]byte(cliOK(t, "attention", "show", paused.AttentionID, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	var args struct{ Record, Text string }
	wantJSON(t, "attention show --json: the proposed call's arguments", string(shown.Proposed.Call.Arguments), &args)
	const what = "attention show --json"
	if args.Record != "AB-1234" {
		t.Errorf("%s: argument record = %q, want AB-1234", what, args.Record)
	}
	if args.Text != "[triage:soon] Cough." {
		t.Errorf("%s: argument text = %q, want %q", what, args.Text, "[triage:soon] Cough.")
	}
	if c := shown.Proposed.Call.Connection; c != "sandbox" {
		t.Errorf("%s: call connection = %q, want sandbox", what, c)
	}
	if tool := shown.Proposed.Call.Tool; tool != "append_note" {
		t.Errorf("%s: call tool = %q, want append_note", what, tool)
	}
	if shown.Sealed != nil {
		t.Errorf("%s: proposed_sealed = %v, want none", what, shown.Sealed)
	}
	if !strings.HasPrefix(shown.CallDigest, "hmac-sha256:") {
		t.Errorf("%s: call digest = %q, want prefix hmac-sha256:", what, shown.CallDigest)
	}
	wantHas(t, what+": the load_record read", string(shown.Proposed.Read["load_record"]), "AB-1234")
	if shown.Proposed.DoneMeans == "" {
		t.Errorf("%s: no done-means", what)
	}
	if shown.Proposed.Purpose == "" {
		t.Errorf("%s: no purpose", what)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, list := range []string{cliOK(t, "attention", "list"), cliOK(t, "attention", "list", "--json")} {
		wantLacks(t, "attention list shows the proposed change", list, "Cough", "proposed")
	}
}
