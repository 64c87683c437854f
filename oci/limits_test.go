package oci

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// openTestLayout opens a layout folder with oa's own layout reader.
func openTestLayout(t *testing.T, dir string, lim Limits) Target {
	t.Helper()
	target, err := Open(context.Background(), Ref{Layout: dir, Repository: "test"}, OpenOptions{Create: true, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// craft pushes the default example into a fresh layout, then stores a
// copy of its manifest changed by edit, as someone with write access to
// the store could. It returns the layout folder and both descriptors.
func craft(t *testing.T, edit func(m *ocispec.Manifest)) (string, ocispec.Descriptor, ocispec.Descriptor) {
	t.Helper()
	return craftIn(t, func(_ string, m *ocispec.Manifest) { edit(m) })
}

// craftIn is craft whose edit is also given the layout's folder, to store
// blobs the edited manifest names.
func craftIn(t testing.TB, edit func(dir string, m *ocispec.Manifest)) (string, ocispec.Descriptor, ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	res := exampletest.Compile(t, examples.Default)
	store, dir := newLayout(t)
	good, err := Push(ctx, store, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := FetchBlob(ctx, store, good)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(dir, &m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	bad := pushRaw(t, store, b)
	if err := store.Tag(ctx, bad, "bad"); err != nil {
		t.Fatal(err)
	}
	return dir, good, bad
}

func TestFetchRefusesALayerClaimedHuge(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		layer int
		code  blocking.Code
	}{
		{"ir", 0, blocking.LayerTooLarge},
		{"component", 1, blocking.LayerTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, good, bad := craft(t, func(m *ocispec.Manifest) { m.Layers[tc.layer].Size = 1 << 40 })
			target := openTestLayout(t, dir, Limits{})
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Fetch(ctx, target, bad, schemas.CheckFetchedIR)
			wantCode(t, err, tc.code)
			_, boundErr := FetchBound(ctx, target, bad, schemas.CheckFetchedIR)
			if tc.layer == 0 {
				wantCode(t, boundErr, tc.code)
			} else if boundErr == nil {
				t.Fatal("FetchBound accepted a layer that is not the IR's part")
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Fatalf("refusing allocated %d bytes", grew)
			}
			if !strings.Contains(err.Error(), "limits.") {
				t.Fatalf("refusal does not say how to raise the limit: %v", err)
			}
			// The same layout still serves the good artifact.
			if _, err := Fetch(ctx, target, good, schemas.CheckFetchedIR); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFetchHonoursPolicyLimits(t *testing.T) {
	ctx := context.Background()
	dir, good, _ := craft(t, func(m *ocispec.Manifest) {})
	_, err := Fetch(ctx, openTestLayout(t, dir, Limits{IRBytes: 16}), good, schemas.CheckFetchedIR)
	wantCode(t, err, blocking.LayerTooLarge)
	_, err = Fetch(ctx, openTestLayout(t, dir, Limits{TotalBytes: 16}), good, schemas.CheckFetchedIR)
	wantCode(t, err, blocking.LayerTooLarge)
	if _, err := Fetch(ctx, openTestLayout(t, dir, Limits{}), good, schemas.CheckFetchedIR); err != nil {
		t.Fatal(err)
	}
}

func TestCopyRefusesALayerClaimedHuge(t *testing.T) {
	ctx := context.Background()
	dir, _, bad := craft(t, func(m *ocispec.Manifest) { m.Layers[1].Size = 1 << 40 })
	src := openTestLayout(t, dir, Limits{})
	dst := openTestLayout(t, t.TempDir(), Limits{})
	_, err := Copy(ctx, src, dst, bad, "")
	wantCode(t, err, blocking.LayerTooLarge)
}

// lyingRegistry is an in-process registry holding the default example
// under oa/lie:v1, with a target opened on it as oa opens one.
func lyingRegistry(t *testing.T) (*registrytest.Registry, Target, ocispec.Descriptor, *Artifact) {
	t.Helper()
	ctx := context.Background()
	reg := registrytest.Start(t)
	target, err := Open(ctx, Ref{Registry: reg.Host(), Repository: "oa/lie"}, OpenOptions{Credentials: credentials.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	res := exampletest.Compile(t, examples.Default)
	desc, err := Push(ctx, target, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	art, err := Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	return reg, target, desc, art
}

// streamZeros writes zeros until the client goes away (or far past any
// limit, so that a client that never stops fails the test, not the box).
func streamZeros(w http.ResponseWriter, req *http.Request) {
	w.WriteHeader(http.StatusOK)
	zeros := make([]byte, 64<<10)
	for sent := 0; sent < 2<<30; sent += len(zeros) {
		if req.Context().Err() != nil {
			return
		}
		if _, err := w.Write(zeros); err != nil {
			return
		}
	}
}

func TestRegistryStreamingZerosIsRefused(t *testing.T) {
	ctx := context.Background()
	reg, target, desc, art := lyingRegistry(t)
	irPath := "/blobs/" + art.Manifest.Layers[0].Digest.String()
	reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, irPath) {
			return false
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		streamZeros(w, req)
		return true
	})
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	wantCode(t, err, blocking.LayerDigestMismatch)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("reading a stream of zeros allocated %d bytes", grew)
	}
}

func TestRegistryClaimingAHugeManifestIsRefused(t *testing.T) {
	ctx := context.Background()
	reg, target, _, _ := lyingRegistry(t)
	reg.Lie(func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.HasSuffix(req.URL.Path, "/manifests/huge") {
			return false
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", digest.FromString("huge").String())
		w.Header().Set("Content-Length", strconv.FormatInt(1<<40, 10))
		if req.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return true
		}
		streamZeros(w, req)
		return true
	})
	_, err := ResolveOnce(ctx, Remember(target), "huge")
	wantCode(t, err, blocking.ManifestTooLarge)
}

func TestLayoutEntryWithAbsurdSizeDoesNotPoisonOthers(t *testing.T) {
	ctx := context.Background()
	dir, good, _ := craft(t, func(m *ocispec.Manifest) {})
	// Add an index.json entry naming the good manifest's bytes under a
	// huge size, and one naming /dev/zero through a link.
	idxPath := filepath.Join(dir, "index.json")
	var idx ocispec.Index
	raw, _ := os.ReadFile(idxPath)
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	zero := digest.FromString("zero")
	linkDir := filepath.Join(dir, "blobs", "sha256")
	if err := os.Symlink("/dev/zero", filepath.Join(linkDir, zero.Encoded())); err != nil {
		t.Fatal(err)
	}
	fifo := digest.FromString("fifo")
	if err := syscall.Mkfifo(filepath.Join(linkDir, fifo.Encoded()), 0o644); err != nil {
		t.Fatal(err)
	}
	idx.Manifests = append(idx.Manifests,
		ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: good.Digest, Size: 1 << 62, Annotations: map[string]string{ocispec.AnnotationRefName: "absurd"}},
		ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: zero, Size: 1 << 20, Annotations: map[string]string{ocispec.AnnotationRefName: "zero"}},
		ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: fifo, Size: 100, Annotations: map[string]string{ocispec.AnnotationRefName: "fifo"}},
	)
	b, _ := json.Marshal(idx)
	if err := os.WriteFile(idxPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	target := openTestLayout(t, dir, Limits{})
	got, err := Resolve(ctx, target, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, target, got, schemas.CheckFetchedIR); err != nil {
		t.Fatalf("a valid digest is poisoned: %v", err)
	}
	absurd, err := Resolve(ctx, target, "absurd")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(ctx, target, absurd, schemas.CheckFetchedIR)
	wantCode(t, err, blocking.ManifestTooLarge)
	for _, tag := range []string{"zero", "fifo"} {
		d, err := Resolve(ctx, target, tag)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Fetch(ctx, target, d, schemas.CheckFetchedIR)
		wantCode(t, err, blocking.LayoutInvalid)
	}
	// Referrers are read through the graph, which skips the bad entries.
	if _, err := target.Predecessors(ctx, got); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedLayoutIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, index, elem string
	}{
		{"not json", `{`, "index.json"},
		{"schema version", `{"schemaVersion":1,"manifests":[]}`, "index.json: schemaVersion"},
		{"bad digest", `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:nothex","size":1}]}`, "index.json: manifests[0].digest"},
		{"negative size", `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + digest.FromString("x").String() + `","size":-1}]}`, "index.json: manifests[0].size"},
		{"oversized", `{"schemaVersion":2,"manifests":[],"annotations":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, "index.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(tc.index), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), Ref{Layout: dir, Repository: "test"}, OpenOptions{})
			wantCode(t, err, blocking.LayoutInvalid)
			if got := blocking.Refusals(err)[0].Path; got != tc.elem {
				t.Fatalf("path = %q, want %q", got, tc.elem)
			}
		})
	}
}

func TestLayoutIndexThroughALinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "index.json")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Ref{Layout: dir, Repository: "test"}, OpenOptions{})
	wantCode(t, err, blocking.LayoutInvalid)
}

func TestLayoutWrittenByOaReadsWithOrasGo(t *testing.T) {
	ctx := context.Background()
	res := exampletest.Compile(t, examples.Default)
	dir := t.TempDir()
	target := openTestLayout(t, dir, Limits{})
	desc, err := Push(ctx, target, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Push(ctx, target, res.Worker, res.IR, "v2", PackOptions{}); err != nil {
		t.Fatal(err)
	}
	store, err := newOrasLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"v1", "v2"} {
		got, err := store.Resolve(ctx, tag)
		if err != nil || got.Digest != desc.Digest {
			t.Fatalf("oras-go resolves %s to %v, %v", tag, got.Digest, err)
		}
	}
	if _, err := Fetch(ctx, store, desc, schemas.CheckFetchedIR); err != nil {
		t.Fatal(err)
	}
}

// newOrasLayout opens dir with oras-go's own layout store.
func newOrasLayout(dir string) (*orasoci.Store, error) { return orasoci.New(dir) }
