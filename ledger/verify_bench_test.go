package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// BenchmarkVerifyReceipts100: oa receipts verify's check of a host with
// 100 runs and receipts: every receipt signature, both checkpoints, the
// binding history and every run's MAC.
func BenchmarkVerifyReceipts100(b *testing.B) {
	d := coordtest.Serve(b, resolve.StarterRegistry(hosttest.Name))
	ctx := context.Background()
	for i := range 100 {
		if _, err := d.C.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: coordtest.Inputs("AB-1234"), RequestID: fmt.Sprintf("v-%d", i), Wait: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	h, err := host.Open(ctx, d.Home)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	for b.Loop() {
		r, err := ledger.Open(h).VerifyReceipts(ctx)
		if err != nil || !r.OK || r.Receipts != 100 {
			b.Fatalf("%+v, %v", r, err)
		}
	}
}
