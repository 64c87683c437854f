package hosttest

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// poolKeys are host private keys made once with signing.GenerateKeys(nil)
// (cosign's format, no password) and kept in keys/. Test keys only:
// they guard nothing. Making and opening a key costs a scrypt each
// (about 0.1 s, more on a loaded machine), which across the hundreds of
// hosts the suite makes was most of its CPU; a pooled key is decrypted
// once per test process (signing remembers opened keys).
//
//go:embed keys/*.key
var poolKeys embed.FS

// poolSize is how many keys keys/ holds.
const poolSize = 48

// nextPoolKey counts the keys handed out in this process.
var nextPoolKey atomic.Int64

// PoolKey returns the next pooled key. Consecutive calls return distinct
// keys (poolSize of them before the pool wraps around), so the hosts one
// test makes never share a key.
func PoolKey(t testing.TB) []byte {
	t.Helper()
	i := (nextPoolKey.Add(1) - 1) % poolSize
	b, err := poolKeys.ReadFile(fmt.Sprintf("keys/%02d.key", i))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ReceiptKeyFile is where the coordinator keeps a host's receipt key:
// coordinator.ReceiptKeyFile, which cannot be imported here (the
// coordinator's own tests use this package); a coordinator test holds the
// two equal.
const ReceiptKeyFile = "keys/receipt.key"

// GiveReceiptKey installs a pooled key as the receipt key of the host
// under home, so its first coordinator does not make one.
func GiveReceiptKey(t testing.TB, home string) {
	t.Helper()
	p := filepath.Join(home, ReceiptKeyFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, PoolKey(t), 0o600); err != nil {
		t.Fatal(err)
	}
}
