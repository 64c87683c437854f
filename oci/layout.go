package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
)

// A layout is an OCI image layout opened for oa. oras-go's oci.Store
// reads every manifest index.json names, and their children, when it
// opens (with sizes taken from index.json), so one hostile entry makes a
// whole layout unusable or exhausts memory. A layout reads only index.json
// at open, bounded; a manifest is read when it is asked for, held to the
// limits; blobs are opened inside the layout only (os.Root), and only when
// they are regular files. Blob writes are oras-go's (oci.Storage verifies
// every pushed byte against its digest); index.json is written the way
// oras-go writes it, so stock tools read the layout.
type layout struct {
	root    string
	dir     *os.Root
	storage *orasoci.Storage
	limits  Limits

	mu    sync.Mutex
	index ocispec.Index
	// preds maps a digest to the manifests naming it, built on first use.
	preds map[digest.Digest][]ocispec.Descriptor
}

// maxGraphBytes bounds what building the predecessor graph reads in all.
const maxGraphBytes = 64 << 20

// openLayout opens the layout at root, which exists. It reads oci-layout
// and index.json (bounded), writing either when it is missing.
func openLayout(root string, lim Limits) (*layout, error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout: %w", err)
	}
	l := &layout{root: root, dir: dir, limits: lim.WithDefaults()}
	if l.storage, err = orasoci.NewStorage(root); err != nil {
		return nil, fmt.Errorf("opening OCI layout: %w", err)
	}
	if err := l.checkLayoutFile(); err != nil {
		return nil, err
	}
	if fi, err := dir.Lstat(ocispec.ImageBlobsDir); err == nil && !fi.IsDir() {
		return nil, layoutInvalid(ocispec.ImageBlobsDir, "is not a folder")
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := dir.Mkdir(ocispec.ImageBlobsDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating OCI layout: %w", err)
		}
	}
	if err := l.readIndex(); err != nil {
		return nil, err
	}
	return l, nil
}

// layoutInvalid is the refusal for the layout element elem.
func layoutInvalid(elem, problem string) error {
	return blocking.New(blocking.LayoutInvalid, "%s", problem).At("", elem)
}

// readSmall reads the regular file name inside the layout, at most limit
// bytes. It returns fs.ErrNotExist when there is none.
func (l *layout) readSmall(name string, limit int64) ([]byte, error) {
	f, err := l.openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readFileBounded(f, limit)
	if errors.Is(err, errLimitRead) {
		return nil, layoutInvalid(name, fmt.Sprintf("is over the limit of %d bytes", limit))
	}
	return b, err
}

// openRegular opens name inside the layout without following a link out
// of it or blocking on a FIFO, and refuses anything but a regular file.
func (l *layout) openRegular(name string) (*os.File, error) {
	f, err := l.dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, layoutInvalid(name, "cannot be opened inside the layout (a link that leaves it?)")
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, layoutInvalid(name, "is not a regular file")
	}
	return f, nil
}

// checkLayoutFile reads oci-layout, writing it when it is missing.
func (l *layout) checkLayoutFile() error {
	raw, err := l.readSmall(ocispec.ImageLayoutFile, 4<<10)
	if errors.Is(err, fs.ErrNotExist) {
		b, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
		return l.writeFile(ocispec.ImageLayoutFile, b)
	}
	if err != nil {
		return err
	}
	var v ocispec.ImageLayout
	if json.Unmarshal(raw, &v) != nil || v.Version != ocispec.ImageLayoutVersion {
		return layoutInvalid(ocispec.ImageLayoutFile, "is not {\"imageLayoutVersion\": \""+ocispec.ImageLayoutVersion+"\"}")
	}
	return nil
}

// readIndex reads index.json, bounded by the manifest limit, and checks
// that every entry is a descriptor: a valid digest, a size that is not
// negative, a media type. A size over the limit is not malformed: that
// entry alone is refused when it is asked for.
func (l *layout) readIndex() error {
	raw, err := l.readSmall(ocispec.ImageIndexFile, l.limits.ManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		l.index = ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
		return nil
	}
	if err != nil {
		return err
	}
	idx, err := parseLayoutIndex(raw)
	if err != nil {
		return err
	}
	l.index = idx
	return nil
}

// parseLayoutIndex decodes and checks a layout's index.json.
func parseLayoutIndex(raw []byte) (ocispec.Index, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return ocispec.Index{}, layoutInvalid(ocispec.ImageIndexFile, "is not a JSON image index")
	}
	if idx.SchemaVersion != 2 {
		return ocispec.Index{}, layoutInvalid(ocispec.ImageIndexFile+": schemaVersion", "must be 2")
	}
	for i, d := range idx.Manifests {
		elem := fmt.Sprintf("%s: manifests[%d]", ocispec.ImageIndexFile, i)
		switch {
		case d.Digest.Validate() != nil:
			return ocispec.Index{}, layoutInvalid(elem+".digest", "is not a valid digest")
		case d.Size < 0:
			return ocispec.Index{}, layoutInvalid(elem+".size", "is negative")
		case d.MediaType == "":
			return ocispec.Index{}, layoutInvalid(elem+".mediaType", "is missing")
		}
	}
	if idx.Manifests == nil {
		idx.Manifests = []ocispec.Descriptor{}
	}
	return idx, nil
}

// writeFile replaces name in the layout atomically: a temporary file
// beside it, renamed over it.
func (l *layout) writeFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(l.root, "."+name+".*")
	if err != nil {
		return fmt.Errorf("writing OCI layout: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing OCI layout: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing OCI layout: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(l.root, name)); err != nil {
		return fmt.Errorf("writing OCI layout: %w", err)
	}
	return nil
}

// saveIndex writes index.json; l.mu is held.
func (l *layout) saveIndex() error {
	b, err := json.Marshal(l.index)
	if err != nil {
		return fmt.Errorf("encoding index.json: %w", err)
	}
	return l.writeFile(ocispec.ImageIndexFile, b)
}

// ReadLimits are the limits the layout's reads are held to.
func (l *layout) ReadLimits() Limits { return l.limits }

// blobName is the layout path of d's blob.
func blobName(d digest.Digest) (string, error) {
	if err := d.Validate(); err != nil {
		return "", fmt.Errorf("%s: %w", d, errdef.ErrInvalidDigest)
	}
	return path.Join(ocispec.ImageBlobsDir, d.Algorithm().String(), d.Encoded()), nil
}

// Fetch opens desc's blob, refusing a descriptor over the limit for its
// type, a blob that is not a regular file inside the layout, and one whose
// size is not the descriptor's (callers verify the digest as they read).
func (l *layout) Fetch(_ context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if err := l.limits.Check(desc); err != nil {
		return nil, err
	}
	name, err := blobName(desc.Digest)
	if err != nil {
		return nil, err
	}
	f, err := l.openRegular(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != desc.Size {
		f.Close()
		return nil, fmt.Errorf("%s: %w", desc.Digest, content.ErrInvalidDescriptorSize)
	}
	return f, nil
}

// Exists reports whether desc's blob is stored.
func (l *layout) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	return l.storage.Exists(ctx, desc)
}

// Push stores content as desc (oras-go verifies size and digest). A
// manifest is also listed in index.json, untagged, as oras-go lists it.
func (l *layout) Push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	if !isManifest(desc.MediaType) {
		return l.storage.Push(ctx, desc, r)
	}
	if err := l.limits.Check(desc); err != nil {
		return err
	}
	raw, err := content.ReadAll(r, desc)
	if err != nil {
		return err
	}
	if err := l.storage.Push(ctx, desc, bytes.NewReader(raw)); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.preds != nil {
		l.addPredecessor(desc, raw)
	}
	if slices.ContainsFunc(l.index.Manifests, func(d ocispec.Descriptor) bool { return d.Digest == desc.Digest }) {
		return nil
	}
	l.index.Manifests = append(l.index.Manifests, plainEntry(desc))
	return l.saveIndex()
}

// plainEntry is desc as an untagged index.json entry.
func plainEntry(desc ocispec.Descriptor) ocispec.Descriptor {
	desc.Data = nil
	if desc.Annotations[ocispec.AnnotationRefName] != "" {
		desc.Annotations = maps.Clone(desc.Annotations)
		delete(desc.Annotations, ocispec.AnnotationRefName)
	}
	if len(desc.Annotations) == 0 {
		desc.Annotations = nil
	}
	return desc
}

// Resolve finds reference in index.json: a tag by its ref.name
// annotation (the last entry wins, as in oras-go), a digest by its entry
// (a plain descriptor), else a stored blob of that digest.
func (l *layout) Resolve(_ context.Context, reference string) (ocispec.Descriptor, error) {
	if reference == "" {
		return ocispec.Descriptor{}, errdef.ErrMissingReference
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	dg, isDigest := digest.Parse(reference)
	for i := len(l.index.Manifests) - 1; i >= 0; i-- {
		d := l.index.Manifests[i]
		switch {
		case isDigest == nil && d.Digest == dg:
			return ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}, nil
		case isDigest != nil && d.Annotations[ocispec.AnnotationRefName] == reference:
			return d, nil
		}
	}
	if isDigest == nil {
		if name, err := blobName(dg); err == nil {
			if fi, err := l.dir.Lstat(name); err == nil && fi.Mode().IsRegular() {
				return ocispec.Descriptor{MediaType: "application/octet-stream", Digest: dg, Size: fi.Size()}, nil
			}
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", reference, errdef.ErrNotFound)
}

// Tag points reference at desc in index.json, as oras-go does: the tag
// moves off any other entry (which stays listed, untagged, while nothing
// else lists its digest) and an untagged entry of desc's digest is
// replaced by the tagged one.
func (l *layout) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if reference == "" {
		return errdef.ErrMissingReference
	}
	ok, err := l.storage.Exists(ctx, desc)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	if _, err := digest.Parse(reference); err == nil {
		return nil // a digest is not a tag; the entry exists once pushed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept, moved []ocispec.Descriptor
	for _, d := range l.index.Manifests {
		switch name := d.Annotations[ocispec.AnnotationRefName]; {
		case name == reference:
			moved = append(moved, d)
		case name == "" && d.Digest == desc.Digest:
		default:
			kept = append(kept, d)
		}
	}
	tagged := plainEntry(desc)
	tagged.Annotations = maps.Clone(tagged.Annotations)
	if tagged.Annotations == nil {
		tagged.Annotations = map[string]string{}
	}
	tagged.Annotations[ocispec.AnnotationRefName] = reference
	kept = append(kept, tagged)
	for _, d := range moved {
		if !slices.ContainsFunc(kept, func(k ocispec.Descriptor) bool { return k.Digest == d.Digest }) {
			kept = append(kept, plainEntry(d))
		}
	}
	l.index.Manifests = kept
	return l.saveIndex()
}

// Predecessors returns the manifests listed in index.json that name node
// (as subject, config, layer or child). The graph is built on first use
// by reading each listed manifest within the limits; an entry that is too
// large, missing or damaged is left out rather than failing the others.
func (l *layout) Predecessors(ctx context.Context, node ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.preds == nil {
		l.buildGraph(ctx)
	}
	return slices.Clone(l.preds[node.Digest]), nil
}

// buildGraph reads every listed manifest into l.preds; l.mu is held.
func (l *layout) buildGraph(ctx context.Context) {
	l.preds = map[digest.Digest][]ocispec.Descriptor{}
	budget := int64(maxGraphBytes)
	seen := map[digest.Digest]bool{}
	for _, d := range l.index.Manifests {
		if seen[d.Digest] || !isManifest(d.MediaType) || d.Size > budget {
			continue
		}
		seen[d.Digest] = true
		raw, err := readBounded(ctx, l, d)
		if err != nil {
			continue
		}
		budget -= d.Size
		l.addPredecessor(plainEntry(d), raw)
	}
}

// addPredecessor records desc as a predecessor of what manifest raw names.
func (l *layout) addPredecessor(desc ocispec.Descriptor, raw []byte) {
	var m struct {
		Config    *ocispec.Descriptor  `json:"config"`
		Layers    []ocispec.Descriptor `json:"layers"`
		Manifests []ocispec.Descriptor `json:"manifests"`
		Subject   *ocispec.Descriptor  `json:"subject"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	succ := append(slices.Clone(m.Layers), m.Manifests...)
	for _, p := range []*ocispec.Descriptor{m.Config, m.Subject} {
		if p != nil {
			succ = append(succ, *p)
		}
	}
	node := plainEntry(desc)
	for _, s := range succ {
		if !slices.ContainsFunc(l.preds[s.Digest], func(d ocispec.Descriptor) bool { return d.Digest == node.Digest }) {
			l.preds[s.Digest] = append(l.preds[s.Digest], node)
		}
	}
}

// Delete removes desc from index.json and deletes its blob. It does not
// collect what only desc named (oa deletes only superseded cosign
// manifests, whose layers are small).
func (l *layout) Delete(_ context.Context, desc ocispec.Descriptor) error {
	name, err := blobName(desc.Digest)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index.Manifests = slices.DeleteFunc(l.index.Manifests, func(d ocispec.Descriptor) bool { return d.Digest == desc.Digest })
	for k, ds := range l.preds {
		l.preds[k] = slices.DeleteFunc(ds, func(d ocispec.Descriptor) bool { return d.Digest == desc.Digest })
	}
	if err := l.saveIndex(); err != nil {
		return err
	}
	if err := l.dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", desc.Digest, err)
	}
	return nil
}
