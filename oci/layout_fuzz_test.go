package oci

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzLayoutIndex feeds arbitrary bytes to a layout's index.json (and, as
// the manifest every entry names, its one blob) and checks that opening
// the layout either refuses layout_invalid or gives entries that are all
// valid descriptors; that resolving, fetching and listing predecessors
// never fault or read past the limits.
func FuzzLayoutIndex(f *testing.F) {
	f.Fuzz(func(t *testing.T, index []byte) {
		idx, err := parseLayoutIndex(index)
		if err != nil {
			wantCode(t, err, "layout_invalid")
			return
		}
		for _, d := range idx.Manifests {
			if d.Digest.Validate() != nil || d.Size < 0 || d.MediaType == "" {
				t.Fatalf("accepted entry %+v", d)
			}
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ocispec.ImageLayoutFile), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ocispec.ImageIndexFile), index, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := openLayout(dir, Limits{ManifestBytes: 64 << 10})
		if err != nil {
			t.Fatalf("parsed but did not open: %v", err)
		}
		ctx := context.Background()
		for _, d := range idx.Manifests {
			// The index itself is stored as every entry's blob: a manifest
			// of the wrong shape, size or digest is refused or skipped.
			name, _ := blobName(d.Digest)
			_ = os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), index, 0o644)
			if got, err := l.Resolve(ctx, d.Digest.String()); err == nil {
				_, _ = readBounded(ctx, l, got)
			}
			_, _ = l.Predecessors(ctx, d)
		}
	})
}
