package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/connectortest"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// TestInventoryDriftRefusesTheNextRun: the downstream server's tools
// change while the coordinator serves, and the server never promised to
// announce a change (no tools.listChanged): the next run is refused
// before its effect (did_not_run, tool_drift), because every effect on
// such a server lists its tools again, and the operator is told which
// connection drifted.
func TestInventoryDriftRefusesTheNextRun(t *testing.T) {
	d := driftHost(t)
	var operator strings.Builder
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: d.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run := func(id string) *coordinator.Result { return appendNote(t, c, id) }
	// The planted read never shows the note, so an unchanged server ends
	// not_sure_if_saved: the effect was sent.
	if res := run("before"); res.Outcome != contract.OutcomeNotSureIfSaved {
		t.Fatalf("before the drift: %+v", res)
	}
	d.specs[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"}}}`)
	d.write()
	res := run("after")
	wantResult(t, "after the drift", res, contract.OutcomeDidNotRun, contract.ReasonToolDrift)
	if !strings.Contains(operator.String(), "connection records lists other tools") {
		t.Fatalf("the operator was not told which connection drifted:\n%s", operator.String())
	}
}

// TestEffectsRelistUnlessTheServerAnnouncesChanges: an effect lists the
// downstream tools again before its call on a server that did not promise
// to announce their changes, and does not on one that did (a listing made
// since with no change announced is the live list); on that server, the
// change it announces refuses the next run before its effect. Listings
// are never too old here (SetRelistAge), so only the announcement can.
func TestEffectsRelistUnlessTheServerAnnouncesChanges(t *testing.T) {
	defer coordinator.SetRelistAge(time.Hour)()
	for _, tc := range []struct {
		name      string
		announces bool
	}{{"silent", false}, {"announcing", true}} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--count-lists"}
			if tc.announces {
				args = append(args, "--announce-changes")
			}
			d := driftHost(t, args...)
			listFile := d.toolsFile + ".lists"
			c, err := coordinator.Open(context.Background(), coordinator.Options{Home: d.Home, Deployment: "clinic", Operator: io.Discard, EffectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			started := countLines(t, listFile) // the connection's check, the binding's, the session's start
			run := func(id string) *coordinator.Result { return appendNote(t, c, id) }
			const runs = 3
			for i := range runs {
				if res := run(fmt.Sprint("run-", i)); res.Outcome != contract.OutcomeNotSureIfSaved {
					t.Fatalf("run %d: %+v", i, res)
				}
			}
			lists := 0
			if !tc.announces {
				lists = runs // one before each effect
			}
			if got := countLines(t, listFile) - started; got != lists {
				t.Fatalf("the server was listed %d times, want %d", got, lists)
			}
			if !tc.announces {
				return
			}
			d.specs[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"record":{"type":"string"}}}`)
			d.write()
			// The announcement travels on its own: runs before it arrives
			// still find the tools unchanged.
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; ; i++ {
				res := run(fmt.Sprint("after-", i))
				if res.Outcome == contract.OutcomeDidNotRun && res.Reason == contract.ReasonToolDrift {
					return
				}
				if res.Outcome != contract.OutcomeNotSureIfSaved {
					t.Fatalf("a run after the announced change: %s/%s, want did_not_run/tool_drift or, before the announcement arrives, %s", res.Outcome, res.Reason, contract.OutcomeNotSureIfSaved)
				}
				if time.Now().After(deadline) {
					t.Fatalf("runs still %s after 10 s: the announced change was not seen", res.Outcome)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// appendNote runs append_triage_note on the drift host's record as
// request id and returns its result.
func appendNote(t *testing.T, c *coordinator.Coordinator, id string) *coordinator.Result {
	t.Helper()
	res, err := c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", RequestID: id, Wait: 30 * time.Second,
		Inputs: json.RawMessage(`{"record_ref":"AB-1234","urgency":"soon","summary":"A note."}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// countLines is the number of lines in file (0 when it does not exist).
func countLines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestStartRefusesChangedInventory: a downstream server whose tools
// changed after the binding is refused at session start
// (connection_inventory_changed), with every connection of the plan
// probed at once; nothing is served.
func TestStartRefusesChangedInventory(t *testing.T) {
	d := driftHost(t)
	d.specs[0].Description = "Read a record, and more."
	d.write()
	var operator strings.Builder
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: d.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("a session started on a server whose tools changed")
	}
	rs := blocking.Refusals(err)
	if len(rs) != 1 {
		t.Fatalf("%d refusals, want 1: %v", len(rs), err)
	}
	if rs[0].Code != blocking.ConnectionInventoryChanged {
		t.Fatalf("refusal %s, want %s", rs[0].Code, blocking.ConnectionInventoryChanged)
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
	d := driftHost(t)
	d.specs[0].Description = "Read a record, and more."
	d.write()
	var operator servetest.Buffer
	c, err := coordinator.Open(context.Background(), coordinator.Options{Home: d.Home, Deployment: "clinic", Operator: &operator, EffectTimeout: 5 * time.Second, ProbeInBackground: true})
	if err != nil {
		t.Fatalf("the session did not open: %v", err)
	}
	defer c.Close()
	wantResult(t, "a run on the changed server", appendNote(t, c, "after-start"), contract.OutcomeDidNotRun, contract.ReasonToolDrift)
	for _, told := range []string{"failed its check at start", "connection records lists other tools"} {
		if out := operator.String(); !strings.Contains(out, told) {
			t.Errorf("the operator was not told %q:\n%s", told, out)
		}
	}
}

// drift is a host bound to a test server whose tool list is read from
// toolsFile on every listing: change specs and write to change the list
// the server gives.
type drift struct {
	*hosttest.Host
	specs     []connectortest.ToolSpec
	toolsFile string
	t         *testing.T
}

// write replaces the server's tool list with specs.
func (d *drift) write() {
	if err := os.Rename(connectortest.WriteTools(d.t, d.t.TempDir(), d.specs), d.toolsFile); err != nil {
		d.t.Fatal(err)
	}
}

// driftHost is a drift host bound to the test server, started with
// serverArgs besides its tools file.
func driftHost(t *testing.T, serverArgs ...string) *drift {
	t.Helper()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	d := &drift{Host: h, t: t, toolsFile: filepath.Join(t.TempDir(), "tools.json"), specs: []connectortest.ToolSpec{
		{Name: "read_record", Description: "Read a record.", Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			Result: json.RawMessage(`{"record":"AB-1234","status":"open","notes":[]}`)},
		{Name: "append_note", Description: "Append a note.", Annotations: json.RawMessage(`{"readOnlyHint":false}`),
			Result: json.RawMessage(`{"saved":true}`)},
	}}
	d.write()
	h.AddConnection(host, "records", resolve.SandboxConnector, connector.Config{Command: connectortest.Server(t), Args: append([]string{"--tools", d.toolsFile, "--reload-tools"}, serverArgs...), Confinement: connectortest.Allow(filepath.Dir(d.toolsFile))})
	h.Bind(host, "claude-test")
	return d
}
