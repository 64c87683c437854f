package oci

import (
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/schemas"
)

// FuzzWorkerManifest stores arbitrary bytes as a manifest in a layout that
// holds the example artifact's blobs and reads it as a worker artifact
// and as a copy: each either succeeds or is a refusal (never a fault or
// a panic), and a refusal comes before the layers are read
// (testdata/fuzz/FuzzWorkerManifest holds a layer digest naming a path, a
// negative size, more layers than any artifact has, and layers larger
// than their parts).
func FuzzWorkerManifest(f *testing.F) {
	dir, _, _ := craftIn(f, func(string, *ocispec.Manifest) {})
	f.Fuzz(func(t *testing.T, raw []byte) {
		target := openTestLayout(t, dir, Limits{ManifestBytes: 1 << 20})
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
		if _, err := PushIfMissing(context.Background(), target, desc, raw); err != nil {
			if blocking.Refusals(err) == nil {
				t.Fatalf("storing: %v", err)
			}
			return
		}
		_, err := Fetch(context.Background(), target, desc, schemas.CheckFetchedIR)
		if err != nil {
			if blocking.Refusals(err) == nil {
				t.Fatalf("a fault, not a refusal: %v", err)
			}
			return
		}
		// What Fetch accepts copies whole.
		if _, err := Copy(context.Background(), target, openTestLayout(t, t.TempDir(), Limits{}), desc, ""); err != nil {
			t.Fatalf("copy: %v", err)
		}
	})
}
