package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/schemas"
)

// junkLayers are n layers naming one 100 KB component blob (stored once
// in the layout at dir), as a hostile manifest lists them: 10,000 of them
// add up to about 1 GB, under the default total.
func junkLayers(t *testing.T, dir string, n int) []ocispec.Descriptor {
	t.Helper()
	data := bytes.Repeat([]byte("x"), 100<<10)
	d := digest.FromBytes(data)
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d.Encoded()), data, 0o644); err != nil {
		t.Fatal(err)
	}
	layers := make([]ocispec.Descriptor, n)
	for i := range layers {
		layers[i] = ocispec.Descriptor{MediaType: ComponentMediaType, Digest: d, Size: int64(len(data))}
	}
	return layers
}

// fetchSmall runs Fetch and fails t when it allocated more than 64 MiB:
// a refusal must come before the layers are read.
func fetchSmall(t *testing.T, target Target, desc ocispec.Descriptor) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Fetch(context.Background(), target, desc, schemas.CheckFetchedIR)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("refusing allocated %d bytes", grew)
	}
	return err
}

// TestManyLayersAreRefusedBeforeReading: a layout manifest listing 10,000
// layers of 100 KB (1 GB, under the total limit), or a few hundred more
// than the IR names, or one layer larger than its part, is refused
// artifact_layers_invalid having read the manifest and the IR only.
func TestManyLayersAreRefusedBeforeReading(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(dir string, m *ocispec.Manifest)
	}{
		{"10000 layers", func(dir string, m *ocispec.Manifest) { m.Layers = append(m.Layers, junkLayers(t, dir, 10000)...) }},
		// Under MaxLayers: refused by the IR's count, 100 MB unread.
		{"more than the IR names", func(dir string, m *ocispec.Manifest) { m.Layers = append(m.Layers, junkLayers(t, dir, 1000)...) }},
		{"a layer larger than its part", func(dir string, m *ocispec.Manifest) { m.Layers[1] = junkLayers(t, dir, 1)[0] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, good, bad := craftIn(t, tc.edit)
			target := openTestLayout(t, dir, Limits{})
			wantCode(t, fetchSmall(t, target, bad), blocking.ArtifactLayersInvalid)
			if _, err := Fetch(context.Background(), target, good, schemas.CheckFetchedIR); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestManyLayersFromARegistryAreRefusedBeforeReading: the same from a
// registry, counted in requests: the manifest and the IR, no other layer.
func TestManyLayersFromARegistryAreRefusedBeforeReading(t *testing.T) {
	ctx := context.Background()
	reg, target, desc, art := lyingRegistry(t)
	data := bytes.Repeat([]byte("x"), 100<<10)
	layer := ocispec.Descriptor{MediaType: ComponentMediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if _, err := PushIfMissing(ctx, target, layer, data); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m *ocispec.Manifest)
	}{
		{"2000 layers", func(m *ocispec.Manifest) {
			for range 2000 {
				m.Layers = append(m.Layers, layer)
			}
		}},
		{"a layer larger than its part", func(m *ocispec.Manifest) { m.Layers[1] = layer }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := art.Manifest
			m.Layers = append([]ocispec.Descriptor(nil), m.Layers...)
			tc.edit(&m)
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			bad := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
			if _, err := PushIfMissing(ctx, target, bad, raw); err != nil {
				t.Fatal(err)
			}
			reg.ResetCounters()
			wantCode(t, fetchSmall(t, target, bad), blocking.ArtifactLayersInvalid)
			if n := reg.Requests(); n > 2 {
				t.Fatalf("%d requests before refusing", n)
			}
		})
	}
	if _, err := Fetch(ctx, target, desc, schemas.CheckFetchedIR); err != nil {
		t.Fatal(err)
	}
}

// TestHostileDescriptorsAreNamedRefusals: a layer digest made to name a
// path, or a negative size, in a layout manifest is descriptor_invalid
// (exit 2) before any path is built from it, never a raw error; a size of
// -1 is not "over the limit".
func TestHostileDescriptorsAreNamedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *ocispec.Manifest)
	}{
		{"path digest", func(m *ocispec.Manifest) { m.Layers[1].Digest = "sha256:../../etc/passwd" }},
		{"path digest of the IR", func(m *ocispec.Manifest) { m.Layers[0].Digest = "sha256:../../../../etc/passwd" }},
		{"negative size", func(m *ocispec.Manifest) { m.Layers[1].Size = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, bad := craft(t, tc.edit)
			target := openTestLayout(t, dir, Limits{})
			_, err := Fetch(context.Background(), target, bad, schemas.CheckFetchedIR)
			wantCode(t, err, blocking.DescriptorInvalid)
			if text := err.Error(); strings.Contains(text, "passwd") || strings.Contains(text, "over the limit") || strings.Contains(text, "-1") {
				t.Fatalf("the refusal repeats the descriptor or misnames it: %v", err)
			}
			_, err = Copy(context.Background(), target, openTestLayout(t, t.TempDir(), Limits{}), bad, "")
			wantCode(t, err, blocking.DescriptorInvalid)
		})
	}
}
