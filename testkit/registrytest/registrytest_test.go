package registrytest_test

import (
	"context"
	"errors"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/testkit/registrytest"
)

// TestRoundTrip pushes, tags, pulls and deletes a manifest and checks the
// counters move.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	repo := reg.Repository(t, "oa/roundtrip")
	blob := []byte(`{"hello":"registry"}`)
	layer, err := oras.PushBytes(ctx, repo, "application/vnd.oa.test+json", blob)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.oa.test", oras.PackManifestOptions{
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "2000-01-01T00:00:00Z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, desc, "v1"); err != nil {
		t.Fatal(err)
	}
	reg.ResetCounters()
	got, err := repo.Resolve(ctx, "v1")
	if err != nil || got.Digest != desc.Digest {
		t.Fatalf("resolve v1 = %v, %v; want %s", got.Digest, err, desc.Digest)
	}
	b, err := content.FetchAll(ctx, repo, layer)
	if err != nil || string(b) != string(blob) {
		t.Fatalf("fetch layer = %q, %v", b, err)
	}
	if reg.Requests() < 2 || reg.BytesServed() < int64(len(blob)) {
		t.Fatalf("counters: %d requests, %d bytes", reg.Requests(), reg.BytesServed())
	}
	if err := repo.Delete(ctx, desc); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := repo.Resolve(ctx, desc.Digest.String()); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("resolve after delete: %v, want not found", err)
	}
}

// TestStopTwice checks Stop is idempotent and the host is loopback.
func TestStopTwice(t *testing.T) {
	reg := registrytest.Start(t)
	if h := reg.Host(); len(h) < len("127.0.0.1:1") || h[:10] != "127.0.0.1:" {
		t.Fatalf("host %q is not 127.0.0.1:PORT", h)
	}
	reg.Stop()
	reg.Stop()
}

func TestDownAndUpKeepStorage(t *testing.T) {
	ctx := context.Background()
	r := registrytest.Start(t)
	repo := r.Repository(t, "oa/down")
	desc, err := oras.PushBytes(ctx, repo, "application/octet-stream", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	host := r.Host()
	r.Down()
	if _, err := repo.Blobs().Resolve(ctx, desc.Digest.String()); err == nil {
		t.Fatal("a registry that is down answered")
	}
	r.Up(t)
	if r.Host() != host {
		t.Fatalf("address changed: %s → %s", host, r.Host())
	}
	if _, err := repo.Blobs().Resolve(ctx, desc.Digest.String()); err != nil {
		t.Fatalf("storage lost across a restart: %v", err)
	}
	r.DownAfter(1)
	if _, err := repo.Blobs().Resolve(ctx, desc.Digest.String()); err != nil {
		t.Fatalf("the request before the cut: %v", err)
	}
	if _, err := repo.Blobs().Resolve(ctx, desc.Digest.String()); err == nil {
		t.Fatal("the request after the cut was served")
	}
	r.Up(t)
	if _, err := repo.Blobs().Resolve(ctx, desc.Digest.String()); err != nil {
		t.Fatal(err)
	}
}
