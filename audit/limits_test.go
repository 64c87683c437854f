package audit

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// entry is one tar entry of a crafted bundle. size, when not zero, is the
// size the header claims (the body written is body, so a claim past it
// leaves the tar ending inside the entry).
type entry struct {
	name     string
	typeflag byte
	body     []byte
	size     int64
	link     string
}

// craftTar writes entries as a tar at a fresh path, without closing the
// tar writer when an entry claims more than its body (as a hostile tool
// would leave it).
func craftTar(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	short := false
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, Format: tar.FormatPAX}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if e.size != 0 {
			hdr.Size = e.size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > int64(len(e.body)) {
			short = true
			break
		}
	}
	if !short {
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "crafted.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// blobEntry is the layout entry of data's blob.
func blobEntry(data []byte) entry {
	d := digest.FromBytes(data)
	return entry{name: "blobs/sha256/" + d.Encoded(), body: data}
}

// craftLayout is the entries of a minimal layout: an audit manifest
// (subject a release manifest) whose layers are docs, each as edit leaves
// its descriptor; the release is tagged, its blob present.
func craftLayout(t *testing.T, edit func(m *ocispec.Manifest, idx *ocispec.Index)) []entry {
	t.Helper()
	release := []byte(`{"schemaVersion":2}`)
	releaseDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, release)
	entries := []entry{{name: ocispec.ImageLayoutFile, body: []byte(`{"imageLayoutVersion":"1.0.0"}`)}, blobEntry(release)}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType, Subject: &releaseDesc, Config: ocispec.DescriptorEmptyJSON}
	m.SchemaVersion = 2
	for _, d := range documents {
		data := []byte("[]")
		desc := content.NewDescriptorFromBytes(d.mediaType, data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: d.name}
		m.Layers = append(m.Layers, desc)
	}
	entries = append(entries, blobEntry([]byte("[]")))
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	idx.SchemaVersion = 2
	tagged := releaseDesc
	tagged.Annotations = map[string]string{ocispec.AnnotationRefName: ReleaseTag}
	idx.Manifests = []ocispec.Descriptor{tagged}
	if edit != nil {
		edit(&m, &idx)
	}
	raw, _ := json.Marshal(m)
	auditDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	auditDesc.Annotations = map[string]string{ocispec.AnnotationRefName: AuditTag}
	if len(idx.Manifests) == 1 {
		idx.Manifests = append(idx.Manifests, auditDesc)
	}
	rawIdx, _ := json.Marshal(idx)
	return append(entries, blobEntry(raw), entry{name: ocispec.ImageIndexFile, body: rawIdx})
}

// openCrafted opens the tar entries make with lim, in a scratch folder
// inside a folder the test then checks nothing was written beside.
func openCrafted(t *testing.T, entries []entry, lim Limits) (*bundle, error) {
	t.Helper()
	parent := t.TempDir()
	scratch := filepath.Join(parent, "scratch")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := openBundle(context.Background(), craftTar(t, entries), scratch, lim)
	if names, _ := os.ReadDir(parent); len(names) != 1 {
		t.Fatalf("unpacking wrote beside its folder: %v", names)
	}
	return b, err
}

// wantRefused asserts err is code, its message naming every want.
func wantRefused(t *testing.T, err error, code blocking.Code, want ...string) {
	t.Helper()
	if !hosttest.HasCode(t, err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%q does not name %q", err.Error(), w)
		}
	}
}

func TestCraftedLayoutReachesItsDocuments(t *testing.T) {
	// The crafted layout itself is read to its documents (which are not
	// host documents, so decoding refuses them): the refusals below are
	// the attacks', not the crafting's.
	_, err := openCrafted(t, craftLayout(t, nil), Limits{})
	wantRefused(t, err, blocking.AuditBundleInvalid, "not its canonical JSON")
}

func TestBundleTarEntryClaimingHugeSizeIsRefusedBeforeReading(t *testing.T) {
	entries := append(craftLayout(t, nil), entry{name: "blobs/sha256/" + digest.FromString("x").Encoded(), body: []byte("x"), size: 1 << 40})
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "blobs/sha256/", "1099511627776", "--max-document-bytes")
}

func TestBundleTarCutInsideAnEntryIsRefused(t *testing.T) {
	entries := append(craftLayout(t, nil), entry{name: "blobs/sha256/" + digest.FromString("x").Encoded(), body: []byte("x"), size: 4096})
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleInvalid, "cut short")
}

func TestBundleDocumentClaimingHugeSizeIsRefusedBeforeReading(t *testing.T) {
	entries := craftLayout(t, func(m *ocispec.Manifest, _ *ocispec.Index) {
		m.Layers[len(m.Layers)-1].Size = 1 << 40
	})
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "document "+documents[len(documents)-1].name, "--max-document-bytes")
}

func TestBundleDocumentOverALowerLimitIsRefused(t *testing.T) {
	_, err := openCrafted(t, craftLayout(t, nil), Limits{DocumentBytes: 1})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "over the audit limit of 1;")
}

func TestBundleAuditManifestClaimingHugeSizeIsRefused(t *testing.T) {
	entries := craftLayout(t, func(_ *ocispec.Manifest, idx *ocispec.Index) {
		huge := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, []byte("{}"))
		huge.Size = 1 << 40
		huge.Annotations = map[string]string{ocispec.AnnotationRefName: AuditTag}
		idx.Manifests = append(idx.Manifests, huge)
	})
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "the audit manifest", "--max-manifest-bytes")
}

func TestBundleIndexOverTheManifestLimitIsRefused(t *testing.T) {
	_, err := openCrafted(t, craftLayout(t, nil), Limits{ManifestBytes: 64})
	wantRefused(t, err, blocking.AuditBundleTooLarge, `tar entry "index.json"`, "--max-manifest-bytes")
}

func TestBundleBlobLongerThanItsDescriptorIsRefused(t *testing.T) {
	// The document blob's tar entry holds one byte more than every
	// document's descriptor says (the digest in its name no longer fits
	// either, as a tool that appends would leave it).
	entries := craftLayout(t, nil)
	for i, e := range entries {
		if e.name == blobEntry([]byte("[]")).name {
			entries[i].body = []byte("[] ")
		}
	}
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleInvalid, "does not match its digest and size")
}

func TestBundleWithThousandsOfEntriesIsRefused(t *testing.T) {
	entries := craftLayout(t, nil)
	for i := 0; len(entries) <= DefaultEntries; i++ {
		entries = append(entries, blobEntry([]byte(fmt.Sprint(i))))
	}
	_, err := openCrafted(t, entries, Limits{})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "more than 4096 entries", "--max-entries")
}

func TestBundleOverItsTotalIsRefused(t *testing.T) {
	entries := append(craftLayout(t, nil), blobEntry(bytes.Repeat([]byte("a"), 4096)))
	_, err := openCrafted(t, entries, Limits{BundleBytes: 4096})
	wantRefused(t, err, blocking.AuditBundleTooLarge, "add up to more than 4096 bytes", "--max-bundle-bytes")
}

func TestBundleLinksAndStrangeNamesAreRefused(t *testing.T) {
	blob := "blobs/sha256/" + digest.FromString("x").Encoded()
	for name, e := range map[string]entry{
		"symbolic link":      {name: blob, typeflag: tar.TypeSymlink, link: "/etc/passwd"},
		"hard link":          {name: blob, typeflag: tar.TypeLink, link: ocispec.ImageIndexFile},
		"FIFO":               {name: blob, typeflag: tar.TypeFifo},
		"device":             {name: blob, typeflag: tar.TypeChar},
		"parent":             {name: "../evil", body: []byte("x")},
		"parent inside":      {name: "blobs/../../evil", body: []byte("x")},
		"absolute":           {name: "/tmp/evil", body: []byte("x")},
		"deep parent":        {name: "blobs/sha256/../../../evil", body: []byte("x")},
		"not a layout file":  {name: "README", body: []byte("x")},
		"not a digest":       {name: "blobs/sha256/evil", body: []byte("x")},
		"folder outside":     {name: "other/", typeflag: tar.TypeDir},
		"control characters": {name: "blobs/\x1b[2J", body: []byte("x")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openCrafted(t, append([]entry{e}, craftLayout(t, nil)...), Limits{})
			wantRefused(t, err, blocking.AuditBundleInvalid, "tar entry")
			if strings.ContainsRune(err.Error(), '\x1b') {
				t.Fatalf("the refusal repeats a control character: %q", err.Error())
			}
		})
	}
	t.Run("repeated", func(t *testing.T) {
		entries := craftLayout(t, nil)
		_, err := openCrafted(t, append(entries, entries[0]), Limits{})
		wantRefused(t, err, blocking.AuditBundleInvalid, "appears twice")
	})
	t.Run("long name", func(t *testing.T) {
		_, err := openCrafted(t, []entry{{name: strings.Repeat("a", 4000), body: []byte("x")}}, Limits{})
		wantRefused(t, err, blocking.AuditBundleInvalid, "tar entry")
		if strings.Contains(err.Error(), strings.Repeat("a", maxNameShown+1)) {
			t.Fatalf("the refusal repeats the whole 4000-byte name: %d bytes", len(err.Error()))
		}
	})
}

func TestBundleThatIsAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bundle.tar")
	if err := mkfifo(p); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, err := openBundle(context.Background(), p, t.TempDir(), Limits{})
	wantRefused(t, err, blocking.AuditBundleInvalid, "regular file")
}
