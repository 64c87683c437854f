package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/testkit/exampletest"
)

func newLayout(t testing.TB) (*oci.Store, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := oci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return store, dir
}

func wantCode(t *testing.T, err error, code blocking.Code) {
	t.Helper()
	if l := blocking.Refusals(err); len(l) == 0 || l[0].Code != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

func TestPushIsReproducibleWithoutTimestamp(t *testing.T) {
	res := exampletest.Compile(t, examples.Default)
	ctx := context.Background()
	a, _ := newLayout(t)
	b, _ := newLayout(t)
	da, err := Push(ctx, a, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Push(ctx, b, exampletest.Compile(t, examples.Default).Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Push(ctx, a, res.Worker, res.IR, "v2", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if da.Digest != db.Digest || da.Digest != again.Digest {
		t.Fatalf("digests differ: %s %s %s", da.Digest, db.Digest, again.Digest)
	}
	art, err := Fetch(ctx, a, da, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := art.Manifest.Annotations[ocispec.AnnotationCreated]; ok {
		t.Fatal("manifest carries a created time without SOURCE_DATE_EPOCH")
	}
	stamp := time.Unix(1700000000, 0)
	dc, err := Push(ctx, a, res.Worker, res.IR, "", PackOptions{Created: &stamp})
	if err != nil || dc.Digest == da.Digest {
		t.Fatalf("a created time did not change the digest: %v", err)
	}
}

func TestManifestShape(t *testing.T) {
	res := exampletest.Compile(t, "invoice-approval")
	raw, layers, err := Manifest(res.Worker, res.IR, PackOptions{Source: "https://example.org/bundles/invoice"})
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.MediaType != ocispec.MediaTypeImageManifest || m.ArtifactType != ArtifactType || m.Config.MediaType != ocispec.MediaTypeEmptyJSON {
		t.Fatalf("manifest types: %s %s %s", m.MediaType, m.ArtifactType, m.Config.MediaType)
	}
	if m.Annotations[AnnotationIRDigest] != res.Digest || m.Annotations[ocispec.AnnotationTitle] != "invoice-approval" ||
		m.Annotations[ocispec.AnnotationVersion] != "0.3.1" || m.Annotations[ocispec.AnnotationSource] == "" {
		t.Fatalf("annotations: %v", m.Annotations)
	}
	want := 1 + len(res.Worker.Evaluators) + 1 + len(res.Worker.Skills)
	if len(m.Layers) != want || len(layers) != want {
		t.Fatalf("%d layers, want %d", len(m.Layers), want)
	}
	if m.Layers[0].MediaType != IRMediaType || m.Layers[0].Digest.String() != res.Digest {
		t.Fatalf("first layer is not the IR: %+v", m.Layers[0])
	}
	for _, l := range m.Layers[1 : 1+len(res.Worker.Evaluators)] {
		if l.MediaType != ComponentMediaType {
			t.Fatalf("component layer has media type %s", l.MediaType)
		}
	}
}

// blobPath is where a layout keeps a blob.
func blobPath(dir string, d ocispec.Descriptor) string {
	return filepath.Join(dir, "blobs", d.Digest.Algorithm().String(), d.Digest.Encoded())
}

func TestFetchRefusesTampering(t *testing.T) {
	res := exampletest.Compile(t, examples.Default)
	ctx := context.Background()
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir string, m *ocispec.Manifest) []byte
		code   blocking.Code
	}{
		{"changed layer byte", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			p := blobPath(dir, m.Layers[1])
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return nil
		}, blocking.LayerDigestMismatch},
		{"ir annotation", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.Annotations[AnnotationIRDigest] = "sha256:" + strings.Repeat("0", 64)
			return mustJSON(t, m)
		}, blocking.IRAnnotationMismatch},
		{"not a worker", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.ArtifactType = "application/vnd.example.other"
			return mustJSON(t, m)
		}, blocking.ArtifactNotWorker},
		{"layer dropped", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.Layers = m.Layers[:len(m.Layers)-1]
			return mustJSON(t, m)
		}, blocking.ArtifactLayersInvalid},
		{"layer title leaves the folder", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.Layers[1].Annotations[ocispec.AnnotationTitle] = "../../.ssh/authorized_keys"
			return mustJSON(t, m)
		}, blocking.ArtifactLayersInvalid},
		{"manifest title is not the IR's name", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.Annotations[ocispec.AnnotationTitle] = "other-worker"
			return mustJSON(t, m)
		}, blocking.ArtifactLayersInvalid},
		{"layers swapped", func(t *testing.T, dir string, m *ocispec.Manifest) []byte {
			m.Layers[1], m.Layers[2] = m.Layers[2], m.Layers[1]
			return mustJSON(t, m)
		}, blocking.ArtifactLayersInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, dir := newLayout(t)
			desc, err := Push(ctx, store, res.Worker, res.IR, "v1", PackOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var m ocispec.Manifest
			raw, _ := os.ReadFile(blobPath(dir, desc))
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if changed := c.tamper(t, dir, &m); changed != nil {
				desc = pushRaw(t, store, changed)
			}
			_, err = Fetch(ctx, store, desc, schemas.CheckFetchedIR)
			wantCode(t, err, c.code)
		})
	}
}

// TestFetchRefusesSchemaInvalidIR: an IR the schema refuses never reaches
// conformance (or pull, which names files after it).
func TestFetchRefusesSchemaInvalidIR(t *testing.T) {
	res := exampletest.Compile(t, examples.Default)
	res.Worker.Skills = nil
	b, _ := ir.Encode(res.Worker)
	store, _ := newLayout(t)
	desc, err := Push(context.Background(), store, res.Worker, b, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(context.Background(), store, desc, schemas.CheckFetchedIR)
	wantCode(t, err, blocking.IRSchemaViolation)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pushRaw stores a hand-edited manifest, as an attacker with write access
// to a registry could.
func pushRaw(t testing.TB, store *oci.Store, manifest []byte) ocispec.Descriptor {
	t.Helper()
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	if _, err := PushIfMissing(context.Background(), store, desc, manifest); err != nil {
		t.Fatal(err)
	}
	return desc
}

func TestCopyCarriesTheArtifact(t *testing.T) {
	res := exampletest.Compile(t, examples.Default)
	ctx := context.Background()
	src, _ := newLayout(t)
	dst, _ := newLayout(t)
	desc, err := Push(ctx, src, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	copied, err := Copy(ctx, src, dst, desc, "moved")
	if err != nil {
		t.Fatal(err)
	}
	if len(copied) != 1 || copied[0] != "artifact" {
		t.Fatalf("copied %v, want only the artifact (nothing is signed yet)", copied)
	}
	got, err := Resolve(ctx, dst, "moved")
	if err != nil || got.Digest != desc.Digest {
		t.Fatalf("resolve in destination: %v %v", got.Digest, err)
	}
	if _, err := Fetch(ctx, dst, got, schemas.CheckFetchedIR); err != nil {
		t.Fatal(err)
	}
}

func TestParseRef(t *testing.T) {
	home := "/home/op/.oa"
	cases := []struct {
		in       string
		layout   bool
		registry string
		repo     string
		tag      string
		layoutAt string
	}{
		{"127.0.0.1:5000/oa/clinic:1.2.0", false, "127.0.0.1:5000", "oa/clinic", "1.2.0", ""},
		{"registry.example.com/team/clinic", false, "registry.example.com", "team/clinic", "", ""},
		{"localhost/clinic:v1", false, "localhost", "clinic", "v1", ""},
		{"localhost:5000", false, "", "localhost", "5000", "/home/op/.oa/oci/localhost"},
		{"team/clinic:v3", false, "", "team/clinic", "v3", "/home/op/.oa/oci/team/clinic"},
		{"clinic-triage:1.2.0", false, "", "clinic-triage", "1.2.0", "/home/op/.oa/oci/clinic-triage"},
		{"/tmp/some layout:v2", true, "", "some-layout", "v2", "/tmp/some layout"},
	}
	for _, c := range cases {
		r, err := ParseRef(c.in, RefOptions{Home: home, Layout: c.layout})
		if err != nil {
			t.Errorf("ParseRef(%q): %v", c.in, err)
			continue
		}
		if r.Registry != c.registry || r.Repository != c.repo || r.Tag != c.tag || r.Layout != c.layoutAt {
			t.Errorf("ParseRef(%q) = %+v", c.in, r)
		}
	}
	d := "sha256:ab" + strings.Repeat("0", 62)
	r, err := ParseRef("127.0.0.1:5000/oa/clinic@"+d, RefOptions{})
	if err != nil || r.Digest.String() != d || r.Reference() != d {
		t.Fatalf("digest ref: %+v %v", r, err)
	}
	for _, bad := range []string{"Bad Name/x", "127.0.0.1:5000/oa@sha256:xyz", "127.0.0.1:5000/UPPER:tag", "clinic@md5:abc"} {
		_, err := ParseRef(bad, RefOptions{Home: home})
		wantCode(t, err, blocking.ReferenceInvalid)
	}
	if err := (Ref{Tag: "v1"}).RequireDigest(""); err == nil {
		t.Fatal("a tag-only reference was accepted where a digest is required")
	}
}

func TestLoopbackIsTheOnlyAutomaticPlainHTTP(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1:5000": true, "localhost:5000": true, "[::1]:5000": true, "localhost": true, "registry.example.com": false, "10.0.0.5:5000": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v", host, got)
		}
	}
}

// TestFetchBoundAgreesWithFetch: FetchBound reads the manifest and the IR
// only, gives the same artifact as Fetch, and refuses every manifest
// tampering Fetch refuses (a layer bound to other bytes included).
func TestFetchBoundAgreesWithFetch(t *testing.T) {
	res := exampletest.Compile(t, examples.Default)
	ctx := context.Background()
	store, dir := newLayout(t)
	desc, err := Push(ctx, store, res.Worker, res.IR, "v1", PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := Fetch(ctx, store, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := FetchBound(ctx, store, desc, schemas.CheckFetchedIR)
	if err != nil {
		t.Fatal(err)
	}
	if bound.IRDigest != full.IRDigest || len(bound.Layers) != len(full.Layers) {
		t.Fatalf("bound %v, full %v", bound.IRDigest, full.IRDigest)
	}
	for i := range full.Layers {
		if !bytes.Equal(bound.Layers[i].Data, full.Layers[i].Data) || bound.Layers[i].Descriptor.Digest != full.Layers[i].Descriptor.Digest {
			t.Fatalf("layer %d differs", i)
		}
	}
	var m ocispec.Manifest
	raw, _ := os.ReadFile(blobPath(dir, desc))
	for name, edit := range map[string]func(m *ocispec.Manifest){
		"layer digest":   func(m *ocispec.Manifest) { m.Layers[1].Digest = digest.FromString("other") },
		"layer size":     func(m *ocispec.Manifest) { m.Layers[2].Size++ },
		"layers swapped": func(m *ocispec.Manifest) { m.Layers[1], m.Layers[2] = m.Layers[2], m.Layers[1] },
		"annotation":     func(m *ocispec.Manifest) { m.Layers[1].Annotations[AnnotationPart] = "component:other" },
		"media type":     func(m *ocispec.Manifest) { m.Layers[1].MediaType = DocumentMediaType },
		"layer dropped":  func(m *ocispec.Manifest) { m.Layers = m.Layers[:len(m.Layers)-1] },
	} {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		edit(&m)
		changed := pushRaw(t, store, mustJSON(t, &m))
		_, err := FetchBound(ctx, store, changed, schemas.CheckFetchedIR)
		if l := blocking.Refusals(err); len(l) == 0 || l[0].Code != blocking.ArtifactLayersInvalid {
			t.Fatalf("%s: FetchBound = %v", name, err)
		}
	}
}
