package coordinator_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestRunEndsSettingMissing (issue 39): a deployment whose connection
// takes a variable from oa's environment (--env NAME) is served by a
// coordinator started without it, as an MCP client starts oa with only
// OA_HOME: the run ends did_not_run/app_setting_missing, not safe to
// retry — it ended did_not_run/app_offline, safe to retry, for ever —
// a coordinator that checks its servers before serving is refused
// connection_setting_missing; and once the variable is set a new coordinator runs it.
func TestRunEndsSettingMissing(t *testing.T) {
	const name = "OA_TEST_RECORDS_FILE"
	t.Setenv(name, "/srv/records.json")
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	opened := h.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	})
	h.AddConnection(opened, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools},
		Env: []string{name}, Confinement: &confine.Profile{Unconfined: true}})
	h.Bind(opened, "claude-test")

	run := func(id string) *coordinator.Result {
		t.Helper()
		c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: io.Discard, EffectTimeout: 5 * time.Second, ProbeInBackground: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Inputs: inputs("AB-1234"), Wait: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
	_, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: io.Discard})
	if !hosttest.HasCode(t, err, blocking.ConnectionSettingMissing) {
		t.Fatalf("a coordinator checking its servers before serving, without %s: %v", name, err)
	}
	res := run("setting-missing")
	wantResult(t, "without "+name, res, contract.OutcomeDidNotRun, contract.ReasonAppSettingMissing)
	if res.SafeToRetry {
		t.Fatalf("a missing setting is not safe to retry: %+v", res)
	}

	t.Setenv(name, "/srv/records.json")
	if res := run("setting-set"); res.Reason == contract.ReasonAppSettingMissing || res.Reason == contract.ReasonAppOffline {
		t.Fatalf("with %s set: %s/%s", name, res.Outcome, res.Reason)
	}
}
