package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/pipeline"
	"github.com/oa-dev/oa/signing"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestReadCheckpointSigners: a v2 checkpoint verifies only with a pinned
// receipt key, a v1 (from before pins) only with the host key; any other
// pairing is refused.
func TestReadCheckpointSigners(t *testing.T) {
	h, receipt := hostAndReceiptKey(t)
	cp := func(typ string) Checkpoint {
		return Checkpoint{Type: typ, Host: h.Policy.Host, Seq: 1, Head: "sha256:" + strings.Repeat("0", 64), Runs: 1, Deployment: "clinic", ReceiptKey: receipt.KeyID(), At: time.Unix(0, 0).UTC()}
	}
	byReceipt := func(v Checkpoint) ([]byte, []byte) {
		b, err := canonical.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := receipt.SignBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		return b, sig
	}
	byHost := func(v Checkpoint) ([]byte, []byte) {
		b, sig, err := h.SignRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		return b, sig
	}
	pinned := PinnedKeys{receipt.KeyID(): receipt.Verifier()}
	cases := []struct {
		name string
		rec  func() ([]byte, []byte)
		keys PinnedKeys
		want blocking.Code // "" accepted
	}{
		{"v2 by the pinned receipt key", func() ([]byte, []byte) { return byReceipt(cp(CheckpointType)) }, pinned, ""},
		{"v2 by an unpinned receipt key", func() ([]byte, []byte) { return byReceipt(cp(CheckpointType)) }, PinnedKeys{}, blocking.ReceiptKeyUnpinned},
		{"v2 by the host key", func() ([]byte, []byte) { return byHost(cp(CheckpointType)) }, pinned, blocking.ReceiptCheckpointMismatch},
		{"v1 by the host key", func() ([]byte, []byte) { return byHost(cp(CheckpointTypeHostSigned)) }, PinnedKeys{}, ""},
		{"v1 by the receipt key", func() ([]byte, []byte) { return byReceipt(cp(CheckpointTypeHostSigned)) }, pinned, blocking.ReceiptCheckpointMismatch},
		{"another type", func() ([]byte, []byte) { return byReceipt(cp("oa.receipt-checkpoint/v3")) }, pinned, blocking.ReceiptCheckpointMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, sig := c.rec()
			got, err := readCheckpoint(h, c.keys, rec, sig)
			switch {
			case c.want == "" && (err != nil || got == nil || got.Seq != 1):
				t.Fatalf("refused: %v", err)
			case c.want != "" && !hosttest.HasCode(t, err, c.want):
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
}

// TestOwnPinMadeMeanwhile: a store check that read the pins just before
// another run's first seal pinned the receipt key finds the key's pin
// when it looks again; a pin that verifies is not "a pin that does not
// verify" (it refused a host's first concurrent runs as
// host_records_disagree). An edited pin is still refused
// (TestReceiptKeyPinTamperedIsNamed).
func TestOwnPinMadeMeanwhile(t *testing.T) {
	h, receipt := hostAndReceiptKey(t)
	ctx := t.Context()
	before, err := Open(h).ReceiptKeyPins(ctx) // read before the pin exists
	if err != nil {
		t.Fatal(err)
	}
	if err := pinReceiptKey(ctx, h, receipt, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := checkOwnPin(ctx, h, before, receipt.KeyID()); err != nil {
		t.Fatalf("a pin made after the pins were read: %v", err)
	}
}

// hostAndReceiptKey is a new test host and a receipt key of its own.
func hostAndReceiptKey(t *testing.T) (*host.Host, *signing.Signer) {
	t.Helper()
	h := hosttest.New(t, nil).Open()
	keys, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	return h, keys.Signer
}
