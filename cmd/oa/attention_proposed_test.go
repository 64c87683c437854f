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
	if paused.Reason != contract.ReasonApprovalRequired || paused.AttentionID == "" {
		t.Fatalf("want a paused run: %+v", paused)
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
	if err := json.Unmarshal(shown.Proposed.Call.Arguments, &args); err != nil || args.Record != "AB-1234" || args.Text != "[triage:soon] Cough." ||
		shown.Proposed.Call.Connection != "sandbox" || shown.Proposed.Call.Tool != "append_note" || shown.Sealed != nil ||
		!strings.HasPrefix(shown.CallDigest, "hmac-sha256:") || !strings.Contains(string(shown.Proposed.Read["load_record"]), "AB-1234") ||
		shown.Proposed.DoneMeans == "" || shown.Proposed.Purpose == "" {
		t.Fatalf("attention show --json: %v %+v (arguments %s)", err, shown, shown.Proposed.Call.Arguments)
	}
	for _, list := range []string{cliOK(t, "attention", "list"), cliOK(t, "attention", "list", "--json")} {
		if strings.Contains(list, "Cough") || strings.Contains(list, "proposed") {
			t.Fatalf("attention list shows the proposed change:\n%s", list)
		}
	}
}
