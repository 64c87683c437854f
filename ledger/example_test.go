package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/demo"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
)

// ExampleLedger_VerifyReceipts verifies a host's receipt chain from its records
// alone: the demo host is prepared, one run is made through the
// coordinator (which seals its receipt through the ledger), and then the
// chain — signatures, links, the signed head checkpoint, the binding and
// the run the receipt names — is checked, as `oa receipts verify` does.
func ExampleLedger_VerifyReceipts() {
	ctx := context.Background()
	home, err := os.MkdirTemp("", "oa-ledger-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(home)
	if _, err := demo.Prepare(ctx, home, io.Discard); err != nil {
		fmt.Println(err)
		return
	}

	// The coordinator runs the workflow once and seals its receipt.
	c, err := coordinator.Open(ctx, coordinator.Options{Home: home, Deployment: demo.Deployment})
	if err != nil {
		fmt.Println(err)
		return
	}
	inputs := json.RawMessage(`{"record_ref":"AB-1234","urgency":"routine","summary":"Example check-in note."}`)
	res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: inputs, RequestID: "example-1", Wait: 30 * time.Second})
	c.Close()
	if err != nil {
		fmt.Println(err)
		return
	}

	// The ledger checks the record it left, without the engine.
	h, err := host.Open(ctx, home)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	report, err := ledger.Open(h).VerifyReceipts(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	list, err := ledger.Open(h).ListReceipts(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run sealed:", res.ReceiptDigest == list[0].Digest)
	fmt.Println("receipt #1:", list[0].Record.Outcome, list[0].Record.Reason)
	fmt.Println("chain holds:", report.OK, "receipts:", report.Receipts, "checkpoint:", report.Checkpoint.Seq)
	// Output:
	// run sealed: true
	// receipt #1: done verified
	// chain holds: true receipts: 1 checkpoint: 1
}
