package resolve_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestStepArgumentsCheckedAtResolve (issue 39): a step's arguments that
// break the input schema of the tool performing its capability were found
// only at run time (connector_arguments_invalid, no field named). Resolve
// now refuses them step_arguments_invalid, naming the job, the step, the
// field and the tool: a required field the arguments never give, a field
// a closed schema does not take, a field of a type the schema does not
// allow. Arguments that fit resolve as before.
func TestStepArgumentsCheckedAtResolve(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         []string // each refusal's detail contains one
	}{
		{"fits", `{"type":"object","properties":{"record":{"type":"string"}},"required":["record"],"additionalProperties":false}`, nil},
		{"renamed", `{"type":"object","properties":{"record_id":{"type":"string"}},"required":["record_id"],"additionalProperties":false}`, []string{
			"job append_triage_note step load_record: field record is not an argument tool read_record takes",
			"job append_triage_note step load_record: field record_id is required by tool read_record",
			"job append_triage_note step confirm_note: field record is not an argument tool read_record takes",
			"job append_triage_note step confirm_note: field record_id is required by tool read_record",
		}},
		{"typed", `{"type":"object","properties":{"record":{"type":"integer"}}}`, []string{
			"job append_triage_note step load_record: field record is not of a type tool read_record allows",
			"job append_triage_note step confirm_note: field record is not of a type tool read_record allows",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, starter())
			tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
				{Name: "read_record", Description: "Read.", InputSchema: json.RawMessage(tc.schema), Annotations: json.RawMessage(`{"readOnlyHint":true}`), Result: json.RawMessage(`{}`)},
				{Name: "append_note", Description: "Append.", Annotations: json.RawMessage(`{"readOnlyHint":false}`), Result: json.RawMessage(`{}`)},
			})
			f.addVerified("records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: &confine.Profile{Unconfined: true}})
			_, err := f.compute(false)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			refusals := blocking.Refusals(err)
			if len(refusals) != len(tc.want) {
				t.Fatalf("got %d refusals, want %d: %v", len(refusals), len(tc.want), err)
			}
			for i, r := range refusals {
				if r.Code != blocking.StepArgumentsInvalid || !strings.Contains(r.Detail, tc.want[i]) || !strings.HasPrefix(r.Path, "jobs.append_triage_note.steps[") {
					t.Errorf("refusal %d: %s %q at %s, want %q", i, r.Code, r.Detail, r.Path, tc.want[i])
				}
			}
		})
	}
}
