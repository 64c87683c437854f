package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// Test fixtures for the signing and verification tests. Names start with
// cs (cosign) so they do not collide with other tests of the package.

const csPassword = "correct horse battery staple"

// csKeyPair is a generated cosign key pair, loaded both ways.
type csKeyPair struct {
	priv, pub []byte
	signer    *Signer
	verifier  *Verifier
}

var (
	csKeysOnce sync.Once
	csKeysErr  error
	csKeysAll  [3]csKeyPair
)

// csKey returns generated key pair i (0..2); scrypt makes generation slow,
// so the pairs are made once per test binary.
func csKey(t testing.TB, i int) csKeyPair {
	t.Helper()
	csKeysOnce.Do(func() {
		for j := range csKeysAll {
			if csKeysAll[j], csKeysErr = csGenerate(); csKeysErr != nil {
				return
			}
		}
	})
	if csKeysErr != nil {
		t.Fatalf("generating keys: %v", csKeysErr)
	}
	return csKeysAll[i]
}

// csGenerate makes and loads one key pair.
func csGenerate() (csKeyPair, error) {
	priv, pub, err := GenerateKeys([]byte(csPassword))
	if err != nil {
		return csKeyPair{}, err
	}
	s, err := LoadSigner(priv, []byte(csPassword))
	if err != nil {
		return csKeyPair{}, err
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		return csKeyPair{}, err
	}
	return csKeyPair{priv: priv, pub: pub, signer: s, verifier: v}, nil
}

// csStore is a target under test with the repository name its payloads
// carry.
type csStore struct {
	target oras.Target
	repo   string
	// layout is the OCI layout folder; empty for the registry.
	layout string
	reg    *registrytest.Registry
}

// csEachStore runs f as a subtest against each kind of target: an OCI
// layout and a repository of an in-process registry.
func csEachStore(t *testing.T, f func(t *testing.T, st csStore)) {
	for _, kind := range []struct {
		name string
		open func(testing.TB) csStore
	}{{"layout", csLayout}, {"registry", csRegistry}} {
		t.Run(kind.name, func(t *testing.T) { f(t, kind.open(t)) })
	}
}

// csLayout opens a fresh OCI image layout.
func csLayout(t testing.TB) csStore {
	dir := t.TempDir()
	store, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return csStore{target: store, repo: "oa.local/clinic-triage", layout: dir}
}

// csRegistry starts a registry and opens repository oa/clinic on it.
func csRegistry(t testing.TB) csStore {
	reg := registrytest.Start(t)
	return csStore{target: reg.Repository(t, "oa/clinic"), repo: reg.Host() + "/oa/clinic", reg: reg}
}

// csPushWorker pushes a small worker artifact (one IR layer whose content
// depends on salt) and tags it salt.
func csPushWorker(t testing.TB, target oras.Target, salt string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	ir := []byte(`{"name":"clinic-` + salt + `","protocol":"oa.worker/v1"}`)
	layer := content.NewDescriptorFromBytes("application/vnd.oa.worker.ir.v1+json", ir)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: "worker.ir.json"}
	if err := target.Push(ctx, layer, bytes.NewReader(ir)); err != nil {
		t.Fatal(err)
	}
	desc, err := oras.PackManifest(ctx, target, oras.PackManifestVersion1_1, "application/vnd.oa.worker.v1", oras.PackManifestOptions{
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "2000-01-01T00:00:00Z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Tag(ctx, desc, salt); err != nil {
		t.Fatal(err)
	}
	return desc
}

// csWantCode fails t unless err is a refusal with code.
func csWantCode(t testing.TB, err error, code blocking.Code) {
	t.Helper()
	refusals := blocking.Refusals(err)
	if len(refusals) != 1 || refusals[0].Code != code {
		t.Fatalf("got error %v; want refusal %s", err, code)
	}
}

// csManifest reads the manifest tagged tag.
func csManifest(t testing.TB, target oras.ReadOnlyTarget, tag string) (ocispec.Descriptor, ocispec.Manifest) {
	t.Helper()
	ctx := context.Background()
	desc, err := target.Resolve(ctx, tag)
	if err != nil {
		t.Fatalf("resolving %s: %v", tag, err)
	}
	b, err := content.FetchAll(ctx, target, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return desc, m
}

// csBlob reads a blob.
func csBlob(t testing.TB, target oras.ReadOnlyTarget, d ocispec.Descriptor) []byte {
	t.Helper()
	b, err := content.FetchAll(context.Background(), target, d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// csForge pushes a cosign manifest over layers (each with its bytes) and
// tags it, as someone with push access but no key could.
func csForge(t testing.TB, target oras.Target, tag string, layers []cosignLayer) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	descs := make([]ocispec.Descriptor, len(layers))
	for i, l := range layers {
		if _, err := oci.PushIfMissing(ctx, target, l.desc, l.blob); err != nil {
			t.Fatal(err)
		}
		descs[i] = l.desc
	}
	cfg, err := cosignConfig(descs)
	if err != nil {
		t.Fatal(err)
	}
	cfgDesc := content.NewDescriptorFromBytes(cosignConfigMediaType, cfg)
	if _, err := oci.PushIfMissing(ctx, target, cfgDesc, cfg); err != nil {
		t.Fatal(err)
	}
	m, err := cosignManifest(cfgDesc, descs)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := oras.TagBytes(ctx, target, ocispec.MediaTypeImageManifest, m, tag)
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// csCorruptBlob overwrites blob d of the layout at dir with other bytes of
// the same length, so that its content no longer matches its digest.
func csCorruptBlob(t testing.TB, dir string, d ocispec.Descriptor) {
	t.Helper()
	path := filepath.Join(dir, "blobs", "sha256", d.Digest.Encoded())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// csIndexManifests counts the manifests listed in a layout's index.json.
func csIndexManifests(t testing.TB, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return len(idx.Manifests)
}

// csUnsetenv unsets key for the rest of the test and restores it after.
func csUnsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
