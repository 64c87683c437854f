package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestPullNeverWritesThroughLinks: links already in the output folder are
// never written through. A folder oa pull did not write is refused, and
// an earlier pull's folder is replaced whole.
func TestPullNeverWritesThroughLinks(t *testing.T) {
	p := newPublisher(t)
	pinned := strings.TrimSpace(p.ok("push", p.bundle, "clinic-pull"))
	victim := p.path("victim.txt")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	victimDir := p.path("victim-dir")
	if err := os.Mkdir(victimDir, 0o755); err != nil {
		t.Fatal(err)
	}

	// A folder that is not a pull's, holding links to outside.
	out := p.path("out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"worker.ir.json": victim, "components": victimDir} {
		if err := os.Symlink(to, filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
	}
	p.refused("pull_output_not_owned", "pull", pinned, "-o", out)
	// The output folder itself a link.
	link := p.path("link")
	if err := os.Symlink(victimDir, link); err != nil {
		t.Fatal(err)
	}
	p.refused("pull_output_not_owned", "pull", pinned, "-o", link)

	// A fresh folder, then again over it (it is the pull's own), after
	// someone planted links in it.
	fresh := p.path("fresh")
	p.ok("pull", pinned, "-o", fresh)
	if _, err := os.Stat(filepath.Join(fresh, "worker.ir.json")); err != nil {
		t.Fatal(err)
	}
	ir := filepath.Join(fresh, "worker.ir.json")
	if err := os.Remove(ir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, ir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(fresh, "components")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victimDir, filepath.Join(fresh, "components")); err != nil {
		t.Fatal(err)
	}
	p.ok("pull", pinned, "-o", fresh)
	fi, err := os.Lstat(ir)
	if err != nil {
		t.Fatalf("worker.ir.json after the second pull: %v", err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("worker.ir.json after the second pull is not a regular file: %v", fi.Mode())
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatal("pull wrote through a link")
	}
	if entries, _ := os.ReadDir(victimDir); len(entries) != 0 {
		t.Fatal("pull wrote into a linked folder")
	}
	// Nothing staged is left beside the output.
	siblings, _ := filepath.Glob(p.path(".fresh.*"))
	if len(siblings) != 0 {
		t.Fatalf("left behind: %v", siblings)
	}
}

// TestPullRefusesAHugeClaimedLayer: a layout whose manifest claims a
// terabyte IR layer is refused layer_too_large, exit 2, before any byte of
// it is read, and its other artifacts still pull.
func TestPullRefusesAHugeClaimedLayer(t *testing.T) {
	p := newPublisher(t)
	pinned := strings.TrimSpace(p.ok("push", p.bundle, "clinic-huge"))
	layout := filepath.Join(os.Getenv("OA_HOME"), "oci", "clinic-huge")
	good := digest.Digest(pinned[strings.Index(pinned, "@")+1:])
	raw, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", good.Encoded()))
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Size = 1 << 40
	bad, _ := json.Marshal(m)
	badDigest := digest.FromBytes(bad)
	if err := os.WriteFile(filepath.Join(layout, "blobs", "sha256", badDigest.Encoded()), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	idxRaw, _ := os.ReadFile(filepath.Join(layout, "index.json"))
	if err := json.Unmarshal(idxRaw, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Manifests = append(idx.Manifests,
		ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: badDigest, Size: int64(len(bad))},
		ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("absurd"), Size: 1 << 62})
	b, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(layout, "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := p.refused("layer_too_large", "pull", "clinic-huge@"+badDigest.String(), "-o", p.path("huge"))
	if !strings.Contains(out, "limits.ir_bytes") {
		t.Fatalf("the refusal does not say how to raise the limit:\n%s", out)
	}
	if _, err := os.Stat(p.path("huge")); !os.IsNotExist(err) {
		t.Fatal("a refused pull wrote its output folder")
	}
	p.ok("pull", pinned, "-o", p.path("fine"))
}
