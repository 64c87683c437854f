package coordinator_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/confine"
	"github.com/oa-dev/oa/connector/confine/launcher"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/internal/testkit/connectortest"
	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/resolve"
)

// TestWeakerKernelStopsRuns: a deployment bound on this kernel, whose
// connection's server has a TCP port list, is served; once the kernel
// holds fewer guarantees (the Landlock ABI capped at 5: abstract unix
// sockets no longer scoped) the next run is refused before it reaches the
// server (did_not_run, plan_changed), and the operator is told the
// confinement changed; never a run on the weaker level.
func TestWeakerKernelStopsRuns(t *testing.T) {
	if confine.KernelABI() < launcher.ABIScoped {
		t.Skipf("this kernel offers Landlock ABI %d; the test lowers it from %d", confine.KernelABI(), launcher.ABIScoped)
	}
	ctx := context.Background()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	tools := connectortest.WriteTools(t, t.TempDir(), []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	})
	net, err := confine.ParseNet("8443")
	if err != nil {
		t.Fatal(err)
	}
	cfg := connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", tools}, Confinement: &confine.Profile{Write: []string{filepath.Dir(tools)}, Net: net}}
	h.AddConnection(host, "records", resolve.SandboxConnector, cfg)
	h.Bind(host, "claude-test")
	var operator strings.Builder
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run := func(id string) *coordinator.Result {
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Wait: 30 * time.Second,
			Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"A note."}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("bound-kernel"); res.Outcome != contract.OutcomeNotSureIfSaved {
		t.Fatalf("on the kernel it was bound on: %+v", res)
	}
	t.Setenv(confine.ABIMaxEnv, "5")
	if res := run("weaker-kernel"); res.Outcome != contract.OutcomeDidNotRun || res.Reason != contract.ReasonPlanChanged {
		t.Fatalf("on a weaker kernel: %+v", res)
	}
	if !strings.Contains(operator.String(), "plan changed: confinement") {
		t.Errorf("the operator was not told the confinement changed:\n%s", operator.String())
	}
}
