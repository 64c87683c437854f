package resolve_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// TestSignRegistryFileInstallsTheCheckedBytes: a registry file from
// elsewhere is signed and installed byte for byte; a bad one refuses and
// leaves the installed registry and its signature as they were.
func TestSignRegistryFileInstallsTheCheckedBytes(t *testing.T) {
	th := hosttest.New(t, nil)
	h := th.Open()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "registry.cue")
	if err := os.WriteFile(src, []byte(starter()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, sig, err := resolve.SignRegistryFile(ctx, h, src, "Reviewer", th.Now)
	if err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(th.Home, resolve.RegistryFile)
	if b, _ := os.ReadFile(installed); string(b) != starter() || sig.RegistryDigest != r.Digest() {
		t.Fatalf("installed %q, signature %+v", b, sig)
	}
	if err := os.WriteFile(src, []byte("host: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := resolve.SignRegistryFile(ctx, h, src, "Reviewer", th.Now); blocking.Refusals(err) == nil {
		t.Fatalf("a bad registry signed: %v", err)
	}
	if b, _ := os.ReadFile(installed); string(b) != starter() {
		t.Fatal("a refused registry changed the installed one")
	}
	if _, err := resolve.CheckRegistrySigned(ctx, h, r); err != nil {
		t.Fatalf("the installed registry's signature: %v", err)
	}
	if l, _ := os.ReadDir(th.Home); hasTemp(l) {
		t.Fatal("a temporary file was left in the host folder")
	}
}

func hasTemp(l []os.DirEntry) bool {
	for _, e := range l {
		if filepath.Ext(e.Name()) == ".new" || len(e.Name()) > 0 && e.Name()[0] == '.' {
			return true
		}
	}
	return false
}
