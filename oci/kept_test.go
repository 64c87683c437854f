package oci

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
)

// TestKeepRepairsADamagedCopy: a kept release reads back whole; a layer
// changed on disk under an intact manifest is refused when read
// (oci.Fetch checks every layer), and Keep again replaces that blob,
// though oras-go skips what a destination says it has with all it names.
func TestKeepRepairsADamagedCopy(t *testing.T) {
	ctx := context.Background()
	res := exampletest.Compile(t, examples.Default)
	src, _ := newLayout(t)
	desc, err := Push(ctx, src, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "releases")
	if _, err := OpenKept(ctx, dir, desc.Digest, OpenOptions{}); !blocking.Has(err, blocking.ArtifactNotFound) {
		t.Fatalf("an empty store: %v, want artifact_not_found", err)
	}
	read := func() error {
		rel, err := OpenKept(ctx, dir, desc.Digest, OpenOptions{})
		if err != nil {
			return err
		}
		_, err = Fetch(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
		return err
	}
	if err := Keep(ctx, src, desc, dir, Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("kept release: %v", err)
	}
	art, err := Fetch(ctx, src, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	last := art.Manifest.Layers[len(art.Manifest.Layers)-1]
	path := blobPath(dir, last)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	_ = os.Chmod(path, 0o644)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read(); !blocking.Has(err, blocking.LayerDigestMismatch) {
		t.Fatalf("a changed layer: %v, want layer_digest_mismatch", err)
	}
	if err := Keep(ctx, src, desc, dir, Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("after Keep again: %v, want the copy repaired", err)
	}
}
