package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// FuzzOpenBundle feeds arbitrary files to the bundle reader: whatever the
// bytes, it never panics and refuses with a closed code, never a fault.
// The seed corpus (testdata/fuzz/FuzzOpenBundle) holds an empty tar, a
// layout without an audit tag, a layout whose audit tag names a missing
// blob, and the crafted bundles TestWriteFuzzSeeds writes: a tar entry
// claiming a terabyte, one cut short, a symbolic and a hard link, "..",
// absolute and repeated names, a document and an audit manifest claiming
// a terabyte, a blob longer than its descriptor, too many entries.
func FuzzOpenBundle(f *testing.F) {
	// Small limits, so that the fuzzer reaches them with small inputs.
	fuzzLimits := Limits{Entries: 64, DocumentBytes: 1 << 20, ManifestBytes: 64 << 10, BundleBytes: 4 << 20}
	f.Add([]byte{})
	f.Add([]byte("not a tar at all"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "bundle.tar")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := openBundle(context.Background(), path, t.TempDir(), fuzzLimits)
		if err == nil {
			if b.release.Descriptor.Digest == "" || len(b.docs) != len(documents) {
				t.Fatalf("accepted a bundle without its documents")
			}
			return
		}
		l := blocking.Refusals(err)
		if len(l) == 0 {
			t.Fatalf("a fault, not a refusal: %v", err)
		}
		if c := l[0].Code; c != blocking.AuditBundleInvalid && c != blocking.AuditBundleTooLarge && c != blocking.ReceiptChainBroken {
			t.Fatalf("refused with %s", c)
		}
	})
}
