package auditcmd

import (
	"bytes"
	"testing"

	"github.com/oa-dev/oa/ledger"
)

// TestVerifyLineCountsInTheSingular: a chain of one receipt is "1
// receipt" (main printed "1 receipts").
func TestVerifyLineCountsInTheSingular(t *testing.T) {
	for n, want := range map[int]string{
		1: "receipt chain ok: 1 receipt, head sha256:h\n",
		2: "receipt chain ok: 2 receipts, head sha256:h\n",
		0: "receipt chain ok: 0 receipts, head sha256:h\n",
	} {
		var b bytes.Buffer
		printVerify(&b, &ledger.ChainReport{OK: true, Receipts: n, Head: "sha256:h"})
		if b.String() != want {
			t.Errorf("%d receipts: %q, want %q", n, b.String(), want)
		}
	}
}
