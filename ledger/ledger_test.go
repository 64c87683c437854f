package ledger_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestOpenReadsNoKey: opening a host's ledger reads and makes nothing, so
// a reader that only verifies (an auditor's folder, `oa receipts verify`)
// leaves no key in the folder it reads; the first seal-side call makes
// the coordinator secret.
func TestOpenReadsNoKey(t *testing.T) {
	h := hosttest.New(t, nil).Open()
	secret := filepath.Join(h.Home, ledger.SecretFile)
	l := ledger.Open(h)
	if _, err := l.VerifyReceipts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening and verifying made the coordinator secret: %v", err)
	}
	if _, err := l.Secret(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("Secret did not make the coordinator secret: %v", err)
	}
}

// TestLedgerKeepsItsKeys: the keys a ledger loaded are the ones every
// later call gets, from any goroutine, without reading their files again
// (a key file removed after the first load does not matter to it), and a
// ledger opened afresh reads the same keys from the files.
func TestLedgerKeepsItsKeys(t *testing.T) {
	h := hosttest.New(t, nil).Open()
	l := ledger.Open(h)
	signer, err := l.ReceiptSigner()
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := l.LogKey()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := l.Secret()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := ledger.Open(h).ReceiptSigner(); err != nil || again.KeyID() != signer.KeyID() {
		t.Fatalf("a ledger opened again signs with another key: %v", err)
	}
	for _, f := range []string{ledger.SecretFile, ledger.ReceiptKeyFile, ledger.ReceiptKeyCacheFile} {
		if err := os.Remove(filepath.Join(h.Home, f)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := l.ReceiptSigner()
			k, kerr := l.LogKey()
			sec, serr := l.Secret()
			if err != nil || kerr != nil || serr != nil || s != signer || k != logKey || string(sec) != string(secret) {
				t.Errorf("a later call got other keys: %v %v %v", err, kerr, serr)
			}
		})
	}
	wg.Wait()
}
