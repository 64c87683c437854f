package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/testkit/connectortest"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/internal/testkit/servetest"
	"github.com/oa-dev/oa/resolve"
)

// TestInventoryDriftRefusesTheNextRun: the downstream server's tools
// change while the coordinator serves; the next run is refused before its
// effect (did_not_run, tool_drift), and the operator is told which
// connection drifted.
func TestInventoryDriftRefusesTheNextRun(t *testing.T) {
	h, specs, write := driftHost(t)
	var operator strings.Builder
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run := func(id string) *coordinator.Result {
		res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Wait: 30 * time.Second,
			Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"A note."}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The planted read never shows the note, so an unchanged server ends
	// not_sure_if_saved: the effect was sent.
	if res := run("before"); res.Outcome != contract.OutcomeNotSureIfSaved {
		t.Fatalf("before the drift: %+v", res)
	}
	specs[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"}}}`)
	write(specs)
	res := run("after")
	if res.Outcome != contract.OutcomeDidNotRun || res.Reason != contract.ReasonToolDrift {
		t.Fatalf("after the drift: %+v", res)
	}
	if !strings.Contains(operator.String(), "connection records lists other tools") {
		t.Fatalf("the operator was not told which connection drifted:\n%s", operator.String())
	}
}

// TestStartRefusesChangedInventory: a downstream server whose tools
// changed after the binding is refused at session start
// (connection_inventory_changed), with every connection of the plan
// probed at once; nothing is served.
func TestStartRefusesChangedInventory(t *testing.T) {
	h, specs, write := driftHost(t)
	specs[0].Description = "Read a record, and more."
	write(specs)
	var operator strings.Builder
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("a session started on a server whose tools changed")
	}
	if rs := blocking.Refusals(err); len(rs) != 1 || rs[0].Code != blocking.ConnectionInventoryChanged {
		t.Fatalf("refusal: %v", err)
	}
	if !strings.Contains(operator.String(), "connection records lists other tools") {
		t.Fatalf("operator:\n%s", operator.String())
	}
}

// TestBackgroundProbeRefusesTheStepsOfAChangedServer: with
// ProbeInBackground (what `oa coordinator serve` uses, so initialize is
// answered while the servers start) a server whose tools changed after
// the binding does not stop the session from opening; the operator is
// told, and a run that needs it waits for the check and is refused before
// anything reaches the server (did_not_run, tool_drift), as after a
// change mid-session.
func TestBackgroundProbeRefusesTheStepsOfAChangedServer(t *testing.T) {
	h, specs, write := driftHost(t)
	specs[0].Description = "Read a record, and more."
	write(specs)
	var operator servetest.Buffer
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second, ProbeInBackground: true})
	if err != nil {
		t.Fatalf("the session did not open: %v", err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: "after-start", Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"A note."}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != contract.OutcomeDidNotRun || res.Reason != contract.ReasonToolDrift {
		t.Fatalf("a run on the changed server: %+v", res)
	}
	if out := operator.String(); !strings.Contains(out, "failed its check at start") || !strings.Contains(out, "connection records lists other tools") {
		t.Fatalf("the operator was not told:\n%s", out)
	}
}

// driftHost is a host bound to a test server whose tool list is read
// from a file on every listing: write replaces the list the server gives
// (specs, as bound, to change and write again).
func driftHost(t *testing.T) (*hosttest.Host, []connectortest.ToolSpec, func([]connectortest.ToolSpec)) {
	t.Helper()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	specs := []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	}
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	write := func(specs []connectortest.ToolSpec) {
		if err := os.Rename(connectortest.WriteTools(t, t.TempDir(), specs), toolsFile); err != nil {
			t.Fatal(err)
		}
	}
	write(specs)
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", toolsFile, "--reload-tools"}, Confinement: connectortest.Allow(filepath.Dir(toolsFile))})
	h.Bind(host, "claude-test")
	return h, specs, write
}
