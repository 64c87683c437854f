package ledger_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/coordtest"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestSealAfterPinNeedsNoHostKey: the host key signs the receipt key's pin
// at the first seal on a host; every later coordinator process seals
// (receipt and head checkpoint) without opening the host key at all —
// proven by moving the host private key away — and the chain verifies.
func TestSealAfterPinNeedsNoHostKey(t *testing.T) {
	s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
	s.Run(t, "first", "AB-1234")
	pins, err := s.H.Versions().LatestOfKind(context.Background(), ledger.ReceiptKeyKind)
	if err != nil || len(pins) != 1 {
		t.Fatalf("pins after the first seal: %d, %v", len(pins), err)
	}
	key := filepath.Join(s.Home, host.HostKeyFile)
	if err := os.Rename(key, key+".away"); err != nil {
		t.Fatal(err)
	}
	s.C.Close()
	s.C = coordtest.Open(t, s.Home) // a new coordinator: a new host, no decrypted key
	for _, rec := range []string{"CD-5678", "OF-0001"} {
		if res := s.Run(t, "later-"+rec, rec); res.Proof != contract.ProofSealed {
			t.Fatalf("run without the host key: %+v", res)
		}
	}
	if r, code := coordtest.VerifyCode(t, s.H); !r.OK || r.Receipts != 3 || r.Checkpoint == nil || r.Checkpoint.Seq != 3 {
		t.Fatalf("chain: %+v (%s)", r, code)
	}
	if pins, _ := s.H.Versions().LatestOfKind(context.Background(), ledger.ReceiptKeyKind); len(pins) != 1 {
		t.Fatalf("the key was pinned again: %d pins", len(pins))
	}
}

// TestReceiptKeyPinTamperedIsNamed: a checkpoint verifies only with a
// receipt key the host pinned. Without the pin (removed, or edited so it
// no longer verifies with the host key) the chain check names it, and no
// new receipt is appended.
func TestReceiptKeyPinTamperedIsNamed(t *testing.T) {
	cases := map[string]string{
		"pin removed": `DELETE FROM versions WHERE kind = 'receipt-key'`,
		"pin edited":  `UPDATE versions SET record = CAST(replace(CAST(record AS TEXT), '"seq":1', '"seq":2') AS BLOB) WHERE kind = 'receipt-key'`,
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			s := coordtest.Serve(t, resolve.StarterRegistry(hosttest.Name))
			s.Run(t, "r-1", "AB-1234")
			s.Run(t, "r-2", "CD-5678")
			coordtest.Exec(t, coordtest.RawDB(t, s.Home), tamper)
			if r, code := coordtest.VerifyCode(t, s.H); r.OK || code != blocking.ReceiptCheckpointMismatch {
				t.Fatalf("chain with the pin tampered: %+v", r)
			}
			before := coordtest.ReceiptCount(t, s.H)
			// Refused before it starts: no effect whose receipt could not
			// be sealed.
			if res := s.Run(t, "after", "EF-0001"); res.Reason != contract.ReasonHostRecordsDisagree || coordtest.Notes(t, s.Home, "EF-0001") != 0 {
				t.Fatalf("a run after the pin was tampered: %+v", res)
			}
			if n := coordtest.ReceiptCount(t, s.H); n != before {
				t.Fatalf("a receipt was appended: %d, had %d", n, before)
			}
		})
	}
}

// TestTestHostsGiveTheReceiptKeyWhereItIsRead: hosttest installs a pooled
// receipt key at the coordinator's path, so test hosts skip making one.
func TestTestHostsGiveTheReceiptKeyWhereItIsRead(t *testing.T) {
	if hosttest.ReceiptKeyFile != ledger.ReceiptKeyFile {
		t.Fatalf("hosttest writes the receipt key to %s, the coordinator reads %s", hosttest.ReceiptKeyFile, ledger.ReceiptKeyFile)
	}
}
