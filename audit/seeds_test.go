package audit

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestWriteFuzzSeeds rewrites the crafted-bundle seeds of FuzzOpenBundle
// in testdata/fuzz/FuzzOpenBundle when OA_WRITE_FUZZ_SEEDS is set (run
// `OA_WRITE_FUZZ_SEEDS=1 go test ./audit/ -run TestWriteFuzzSeeds`); the
// seeds are committed, so the fuzz test's seed run covers every attack.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("OA_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set OA_WRITE_FUZZ_SEEDS=1 to rewrite the seeds")
	}
	blob := "blobs/sha256/" + digest.FromString("x").Encoded()
	seeds := map[string][]entry{
		"entry-claims-huge-size": append(craftLayout(t, nil), entry{name: blob, body: []byte("x"), size: 1 << 40}),
		"entry-cut-short":        append(craftLayout(t, nil), entry{name: blob, body: []byte("x"), size: 4096}),
		"entry-symlink":          append([]entry{{name: blob, typeflag: tar.TypeSymlink, link: "/etc/passwd"}}, craftLayout(t, nil)...),
		"entry-hardlink":         append([]entry{{name: blob, typeflag: tar.TypeLink, link: ocispec.ImageIndexFile}}, craftLayout(t, nil)...),
		"entry-parent-name":      append([]entry{{name: "blobs/sha256/../../../evil", body: []byte("x")}}, craftLayout(t, nil)...),
		"entry-absolute-name":    append([]entry{{name: "/tmp/evil", body: []byte("x")}}, craftLayout(t, nil)...),
		"entry-repeated":         append(craftLayout(t, nil), craftLayout(t, nil)[0]),
		"document-claims-huge-size": craftLayout(t, func(m *ocispec.Manifest, _ *ocispec.Index) {
			m.Layers[0].Size = 1 << 40
		}),
		"audit-manifest-claims-huge-size": craftLayout(t, func(_ *ocispec.Manifest, idx *ocispec.Index) {
			huge := idx.Manifests[0]
			huge.Size = 1 << 40
			huge.Annotations = map[string]string{ocispec.AnnotationRefName: AuditTag}
			idx.Manifests = append(idx.Manifests, huge)
		}),
		"documents-not-canonical": craftLayout(t, nil),
	}
	longer := craftLayout(t, nil)
	for i, e := range longer {
		if e.name == blobEntry([]byte("[]")).name {
			longer[i].body = []byte("[] ")
		}
	}
	seeds["blob-longer-than-descriptor"] = longer
	many := craftLayout(t, nil)
	for i := 0; len(many) <= 64; i++ {
		many = append(many, blobEntry([]byte(fmt.Sprint(i))))
	}
	seeds["too-many-entries"] = many
	dir := filepath.Join("testdata", "fuzz", "FuzzOpenBundle")
	for name, entries := range seeds {
		data, err := os.ReadFile(craftTar(t, entries))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
