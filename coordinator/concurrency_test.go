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
		if res == nil {
			t.Fatalf("run %d: no result", i)
		}
		if res.Outcome != contract.OutcomeDone {
			t.Fatalf("run %d: outcome %s (reason %s), want %s", i, res.Outcome, res.Reason, contract.OutcomeDone)
		}
		if want := fmt.Sprintf("concurrent-%d", i); res.RequestID != want {
			t.Fatalf("run %d: request %q, want %q", i, res.RequestID, want)
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
	if len(runs) != n {
		t.Errorf("%d distinct runs for %d requests", len(runs), n)
	}
	if len(receipts) != n {
		t.Errorf("%d distinct receipts for %d requests", len(receipts), n)
	}
	report, _ := ledger.Open(s.host).VerifyReceipts(context.Background())
	if !report.OK {
		t.Errorf("the receipt chain does not verify: %+v", report)
	}
	if report.Receipts != n {
		t.Errorf("the receipt chain holds %d receipts, want %d", report.Receipts, n)
	}
}
