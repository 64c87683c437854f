package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector/sandbox"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// Test50ConcurrentRuns: fifty run_workflow calls at once on one
// coordinator each complete, each with its own run and receipt, and each
// writes its note exactly once.
func Test50ConcurrentRuns(t *testing.T) {
	s := serve(t, resolve.StarterRegistry(hosttest.Name))
	const n = 50
	results := make([]*coordinator.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := json.RawMessage(fmt.Sprintf(`{"record_ref":"AB-1234","urgency":"routine","summary":"Concurrent note %d."}`, i))
			res, err := s.c.Run(context.Background(), coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: fmt.Sprintf("concurrent-%d", i), Wait: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	runs, receipts := map[string]bool{}, map[string]bool{}
	for i, res := range results {
		if res == nil || res.Outcome != contract.OutcomeDone || res.RequestID != fmt.Sprintf("concurrent-%d", i) {
			t.Fatalf("run %d: %+v", i, res)
		}
		runs[res.RunID], receipts[res.ReceiptDigest] = true, true
	}
	notes, _ := sandbox.Notes(sandbox.Dir(s.Home), "AB-1234")
	texts := map[string]int{}
	for _, n := range notes {
		texts[n.Text]++
	}
	for i := range n {
		if k := texts[fmt.Sprintf("[triage:routine] Concurrent note %d.", i)]; k != 1 {
			t.Fatalf("run %d's note is on the record %d times", i, k)
		}
	}
	if len(runs) != n || len(receipts) != n {
		t.Fatalf("%d distinct runs and %d receipts for %d requests", len(runs), len(receipts), n)
	}
	if report, _ := ledger.Open(s.host).VerifyReceipts(context.Background()); !report.OK || report.Receipts != n {
		t.Fatalf("receipt chain: %+v", report)
	}
}
