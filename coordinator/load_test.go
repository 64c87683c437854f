package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/servetest"
)

// loadRuns is how many concurrent runs each coordinator of TestLoadTwoCoordinators
// is sent: OA_LOAD_RUNS, else 60 (the full load of issue 22 is 500, run as
// a documented benchmark: docs/PERFORMANCE.md, "Load").
func loadRuns(t *testing.T) int {
	if s := os.Getenv("OA_LOAD_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("OA_LOAD_RUNS=%q is not a positive count", s)
		}
		return n
	}
	return 60
}

// TestLoadTwoCoordinators: two `oa coordinator serve` processes on one
// OA_HOME (two MCP clients on one host), each sent loadRuns concurrent
// run_workflow calls with their own request ids. No call may fail, and
// every run must end with its true outcome: done exactly when its note is
// on the sandbox record (once), did_not_run exactly when it is not. A run
// still running when its call returned (back-pressure) is read with
// get_run until it ends.
func TestLoadTwoCoordinators(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa and runs it as two subprocesses")
	}
	oa := servetest.Binary(t)
	n := loadRuns(t)
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	// A downstream call slowed by the load is waited for: an effect cut off
	// by its timeout is honestly not_sure_if_saved, which this test, which
	// compares every outcome with the record, cannot judge.
	o := servetest.ClientOptions{ServeExtras: []string{"--effect-timeout", "10m"}}
	clients := []*servetest.Client{h.Connect(t, o), h.Connect(t, o)}
	type answer struct {
		client  int
		id      string
		summary string
		res     map[string]any
		code    string
	}
	answers := make([]answer, 0, 2*n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for ci, c := range clients {
		for i := range n {
			wg.Go(func() {
				a := answer{client: ci, id: fmt.Sprintf("load-%d-%d", ci, i), summary: fmt.Sprintf("Load note %d of client %d.", i, ci)}
				res, err := c.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: contract.ToolRunWorkflow, Arguments: map[string]any{
					"workflow": "append_triage_note", "request_id": a.id, "wait_seconds": 120, "inputs": triage("AB-1234", a.summary)}})
				switch {
				case err != nil:
					a.code = "Protocol: " + err.Error()
				case res.IsError:
					a.code = fmt.Sprint(res.Content[0].(*mcp.TextContent).Text)
				default:
					raw, _ := json.Marshal(res.StructuredContent)
					_ = json.Unmarshal(raw, &a.res)
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	// Runs still waiting their turn (or running) when their call returned
	// are read until they end, before the record is read.
	for i := range answers {
		a := &answers[i]
		for a.code == "" && a.res["outcome"] == string(contract.OutcomeRunning) {
			res, err := clients[a.client].Session.CallTool(context.Background(), &mcp.CallToolParams{Name: contract.ToolGetRun, Arguments: map[string]any{"run_id": a.res["run_id"], "wait_seconds": 60}})
			if err != nil {
				t.Fatalf("%s: get_run: %v", a.id, err)
			}
			if res.IsError {
				t.Fatalf("%s: get_run answered a tool error: %+v", a.id, res.Content)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			a.res = nil
			_ = json.Unmarshal(raw, &a.res)
		}
	}
	notes, err := sandbox.Notes(sandbox.Dir(h.Home), "AB-1234")
	if err != nil {
		t.Fatal(err)
	}
	onRecord := map[string]int{}
	for _, note := range notes {
		onRecord[note.Text]++
	}
	outcomes := map[string]int{}
	for _, a := range answers {
		if a.code != "" {
			t.Errorf("%s: the call failed: %s", a.id, a.code)
			continue
		}
		outcome := fmt.Sprint(a.res["outcome"])
		outcomes[outcome+"/"+fmt.Sprint(a.res["reason"])]++
		saved := onRecord["[triage:soon] "+a.summary]
		switch {
		case saved > 1:
			t.Errorf("%s: the note is on the record %d times", a.id, saved)
		case saved == 1 && outcome != string(contract.OutcomeDone):
			t.Errorf("%s: the note was saved, but the run reads %s/%v", a.id, outcome, a.res["reason"])
		case saved == 0 && outcome != string(contract.OutcomeDidNotRun):
			t.Errorf("%s: the note was not saved, but the run reads %s/%v", a.id, outcome, a.res["reason"])
		}
	}
	t.Logf("%d runs on two coordinators: %v", 2*n, outcomes)
	if t.Failed() {
		for i, c := range clients {
			t.Logf("coordinator %d stderr:\n%s", i, c.Stderr)
		}
	}
}
