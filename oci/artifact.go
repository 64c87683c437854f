package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
)

// Media types of a worker artifact.
const (
	ArtifactType       = "application/vnd.oa.worker.v1"
	IRMediaType        = ir.MediaType
	ComponentMediaType = "application/vnd.oa.worker.component.v1+cue"
	DocumentMediaType  = "application/vnd.oa.worker.doc.v1+markdown"
)

// Annotations oa writes.
const (
	// AnnotationIRDigest carries the workerIrDigest on the manifest.
	AnnotationIRDigest = "dev.oa.worker.ir.digest"
	// AnnotationPart names which part of the IR a layer holds:
	// "ir", "component:NAME", "persona" or "skill:NAME".
	AnnotationPart = "dev.oa.worker.part"
)

// PackOptions are the optional parts of a manifest.
type PackOptions struct {
	// Source is the org.opencontainers.image.source annotation: where the
	// bundle's source lives (a URL). Empty leaves it out.
	Source string
	// Created is the org.opencontainers.image.created time. Nil leaves it
	// out, which keeps the manifest digest a function of the content only;
	// CreatedFromEnv reads SOURCE_DATE_EPOCH.
	Created *time.Time
	// Progress, when set, is told of each blob as it is sent or found
	// already present.
	Progress func(desc ocispec.Descriptor, sent bool)
}

// CreatedFromEnv returns the time SOURCE_DATE_EPOCH sets, or nil when it is
// unset. A value that is not a Unix time is a refusal.
func CreatedFromEnv() (*time.Time, error) {
	v, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok || v == "" {
		return nil, nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs < 0 {
		return nil, blocking.New(blocking.SourceDateEpochInvalid, "the value is not a whole number of seconds")
	}
	t := time.Unix(secs, 0).UTC()
	return &t, nil
}

// Layer is one part of an artifact with its bytes.
type Layer struct {
	Descriptor ocispec.Descriptor
	Data       []byte
}

// Layers returns the layers of w's artifact, in manifest order: the IR,
// then the components and documents in the IR's own order. irBytes must be
// the canonical encoding of w.
func Layers(w *ir.Worker, irBytes []byte) []Layer {
	layers := parts(w, irBytes)
	for i := range layers {
		layers[i].Descriptor.Digest = digest.FromBytes(layers[i].Data)
	}
	return layers
}

// parts is Layers without the digests, which need every byte hashed:
// checking fetched layers compares bytes, whose digests are already known.
func parts(w *ir.Worker, irBytes []byte) []Layer {
	layers := []Layer{layer(IRMediaType, "ir", "worker.ir.json", irBytes)}
	for _, e := range w.Evaluators {
		layers = append(layers, layer(ComponentMediaType, "component:"+e.Name, "components/"+e.Name+".cue", []byte(e.Source)))
	}
	layers = append(layers, layer(DocumentMediaType, "persona", w.Persona.Name, []byte(w.Persona.Text)))
	for _, d := range w.Skills {
		layers = append(layers, layer(DocumentMediaType, "skill:"+d.Name, "skills/"+d.Name, []byte(d.Text)))
	}
	return layers
}

// layer describes data as one part, without its digest.
func layer(mediaType, part, title string, data []byte) Layer {
	return Layer{
		Descriptor: ocispec.Descriptor{
			MediaType: mediaType,
			Size:      int64(len(data)),
			Annotations: map[string]string{
				AnnotationPart:          part,
				ocispec.AnnotationTitle: title,
			},
		},
		Data: data,
	}
}

// Manifest returns the manifest bytes of w's artifact. The same IR and
// options always give the same bytes.
func Manifest(w *ir.Worker, irBytes []byte, opts PackOptions) ([]byte, []Layer, error) {
	layers := Layers(w, irBytes)
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Annotations: map[string]string{
			ocispec.AnnotationTitle:   w.Name,
			ocispec.AnnotationVersion: w.Version,
			AnnotationIRDigest:        ir.DigestBytes(irBytes),
		},
	}
	if opts.Source != "" {
		m.Annotations[ocispec.AnnotationSource] = opts.Source
	}
	if opts.Created != nil {
		m.Annotations[ocispec.AnnotationCreated] = opts.Created.UTC().Format(time.RFC3339)
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, l.Descriptor)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return b, layers, nil
}

// pushConcurrency is how many blobs Push sends at once: oras push's
// default (--concurrency 5).
const pushConcurrency = 5

// Push writes w's artifact into target, tags it with tag when tag is not
// empty, and returns the manifest descriptor. Blobs already present are
// not sent again. The blobs go up concurrently, as oras push sends them:
// the artifact is packed into memory and copied with oras.Copy (which,
// for a registry, also pushes the manifest under its tag in one request).
func Push(ctx context.Context, target oras.Target, w *ir.Worker, irBytes []byte, tag string, opts PackOptions) (ocispec.Descriptor, error) {
	manifest, layers, err := Manifest(w, irBytes, opts)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	blobs := append([]Layer{{Descriptor: ocispec.DescriptorEmptyJSON, Data: ocispec.DescriptorEmptyJSON.Data}}, layers...)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	src := newPacked(desc, manifest, blobs, tag)
	copyOpts := oras.CopyGraphOptions{Concurrency: pushConcurrency}
	if opts.Progress != nil {
		// Progress is told of blobs only (not the manifest), once each.
		var mu sync.Mutex
		tell := func(sent bool) func(context.Context, ocispec.Descriptor) error {
			return func(_ context.Context, d ocispec.Descriptor) error {
				if d.Digest != desc.Digest {
					mu.Lock()
					opts.Progress(blobDescriptor(blobs, d), sent)
					mu.Unlock()
				}
				return nil
			}
		}
		copyOpts.PostCopy, copyOpts.OnCopySkipped = tell(true), tell(false)
	}
	if tag == "" {
		if err := oras.CopyGraph(ctx, src, target, desc, copyOpts); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("pushing: %w", err)
		}
		return desc, nil
	}
	if _, err := oras.Copy(ctx, src, tag, target, tag, oras.CopyOptions{CopyGraphOptions: copyOpts}); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing: %w", err)
	}
	return desc, nil
}

// blobDescriptor is the full descriptor (with annotations) of the blob d
// names among blobs; oras-go hands callbacks the descriptor it copied.
func blobDescriptor(blobs []Layer, d ocispec.Descriptor) ocispec.Descriptor {
	for _, l := range blobs {
		if l.Descriptor.Digest == d.Digest {
			return l.Descriptor
		}
	}
	return d
}

// PushIfMissing pushes data (described by desc) unless target has it, and
// reports whether it sent it: re-publishing what a registry holds sends
// nothing.
func PushIfMissing(ctx context.Context, target oras.Target, desc ocispec.Descriptor, data []byte) (bool, error) {
	desc.Data = nil
	exists, err := target.Exists(ctx, desc)
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", desc.Digest, err)
	}
	if exists {
		return false, nil
	}
	if err := target.Push(ctx, desc, bytes.NewReader(data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return false, fmt.Errorf("pushing %s: %w", desc.Digest, err)
	}
	return true, nil
}

// Artifact is a worker artifact read back and verified.
type Artifact struct {
	// Descriptor is the manifest's descriptor; its digest is the
	// artifactDigest.
	Descriptor ocispec.Descriptor
	Manifest   ocispec.Manifest
	// IR is the IR layer's bytes, canonical; Worker is IR decoded.
	IR     []byte
	Worker *ir.Worker
	// IRDigest is the workerIrDigest.
	IRDigest string
	// Layers are all layers with their verified bytes.
	Layers []Layer
}

// Resolve looks up ref in target. A missing reference is artifact_not_found.
func Resolve(ctx context.Context, target oras.ReadOnlyTarget, reference string) (ocispec.Descriptor, error) {
	desc, err := target.Resolve(ctx, reference)
	if errors.Is(err, errdef.ErrNotFound) {
		return ocispec.Descriptor{}, blocking.New(blocking.ArtifactNotFound, "nothing is stored under that reference")
	}
	if r := resolveRefusal(err); r != nil {
		return ocispec.Descriptor{}, r
	}
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolving: %w", err)
	}
	return desc, nil
}

// MaxLayers bounds the layers of a worker artifact's manifest: the IR,
// one per component and document. A bundle holds at most 256 files, so a
// genuine artifact has far fewer; a manifest with more is refused before
// any layer is read.
const MaxLayers = 1024

// Fetch reads the worker artifact desc names from target and verifies it:
// every blob against its digest, the manifest's media and artifact types,
// the IR annotation against the IR layer, the IR's strict canonical
// decoding and that the layers are exactly the parts the IR names.
//
// What is read is bounded by the IR before it is read: the manifest's
// descriptors are checked (each valid and within its limit, all within
// the total, at most MaxLayers), then the IR layer alone is read and
// checked, and every other layer must have the size of the IR's own part
// before any of them is read. So a manifest that lists thousands of
// layers, or layers larger than the IR's parts, is refused having read
// the manifest and the IR only.
//
// The IR layer is decoded and held to the schema by check, which every
// caller passes (schemas.CheckFetchedIR): a nil check refuses the fetch
// before anything is read, never skips the schema.
func Fetch(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor, check SchemaCheck) (*Artifact, error) {
	if check == nil {
		return nil, errNoSchemaCheck
	}
	a, err := fetchManifest(ctx, target, desc)
	if err != nil {
		return nil, err
	}
	if len(a.Manifest.Layers) > MaxLayers {
		return nil, blocking.New(blocking.ArtifactLayersInvalid, "the manifest lists %d layers, more than the %d a worker artifact can have", len(a.Manifest.Layers), MaxLayers)
	}
	// Every layer is checked against its limit, and all of them against
	// the total, before the first is read.
	if err := LimitsOf(target).checkTotal(a.Manifest.Layers); err != nil {
		return nil, err
	}
	irDesc, err := irLayer(a.Manifest.Layers)
	if err != nil {
		return nil, err
	}
	if a.IR, err = fetch(ctx, target, irDesc); err != nil {
		return nil, err
	}
	if err := a.checkIR(check); err != nil {
		return nil, err
	}
	if err := a.checkLayerSizes(); err != nil {
		return nil, err
	}
	if a.Layers, err = fetchLayers(ctx, target, a.Manifest.Layers, irDesc, a.IR); err != nil {
		return nil, err
	}
	if err := a.checkLayers(); err != nil {
		return nil, err
	}
	return a, nil
}

// checkLayerSizes refuses, before any layer but the IR is read, a
// manifest whose layers are not as many as the IR's parts or not each
// the size of its part: the bytes read afterwards are then the IR's own
// parts' worth, never what the manifest claims.
func (a *Artifact) checkLayerSizes() error {
	want := parts(a.Worker, a.IR)
	if len(want) != len(a.Manifest.Layers) {
		return blocking.New(blocking.ArtifactLayersInvalid, "the manifest has %d layers, the IR names %d parts", len(a.Manifest.Layers), len(want))
	}
	for i, w := range want {
		if a.Manifest.Layers[i].Size != int64(len(w.Data)) {
			return blocking.New(blocking.ArtifactLayersInvalid, "layer %d is not the size of the IR's part %s", i, w.Descriptor.Annotations[AnnotationPart])
		}
	}
	return nil
}

// FetchBound is Fetch for a host that needs the artifact's content, not
// copies of its blobs: it reads the manifest and the IR layer, verifies
// both, and binds every other layer to the IR by digest (its descriptor
// must be the digest, size, type and annotations of the IR's own part),
// without downloading what the IR already holds. Its guarantee about the
// bytes a host uses is Fetch's; unlike Fetch it does not notice a blob
// that is missing or damaged in storage, which oa verify and oa pull do.
// Its check is Fetch's, as required.
func FetchBound(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor, check SchemaCheck) (*Artifact, error) {
	if check == nil {
		return nil, errNoSchemaCheck
	}
	a, err := fetchManifest(ctx, target, desc)
	if err != nil {
		return nil, err
	}
	irDesc, err := irLayer(a.Manifest.Layers)
	if err != nil {
		return nil, err
	}
	if a.IR, err = fetch(ctx, target, irDesc); err != nil {
		return nil, err
	}
	if err := a.checkIR(check); err != nil {
		return nil, err
	}
	// The IR's parts, hashed (the IR itself already was): each manifest
	// layer must carry exactly that digest and size, which binds its bytes
	// to the part; checkLayers then checks types and annotations.
	want := parts(a.Worker, a.IR)
	if len(want) != len(a.Manifest.Layers) {
		return nil, blocking.New(blocking.ArtifactLayersInvalid, "the manifest has %d layers, the IR names %d parts", len(a.Manifest.Layers), len(want))
	}
	a.Layers = make([]Layer, len(want))
	for i, w := range want {
		d := digest.Digest(a.IRDigest)
		if i > 0 {
			d = digest.FromBytes(w.Data)
		}
		got := a.Manifest.Layers[i]
		if got.Digest != d || got.Size != int64(len(w.Data)) {
			return nil, blocking.New(blocking.ArtifactLayersInvalid, "layer %d is not the IR's part %s", i, w.Descriptor.Annotations[AnnotationPart])
		}
		a.Layers[i] = Layer{Descriptor: got, Data: w.Data}
	}
	if err := a.checkLayers(); err != nil {
		return nil, err
	}
	return a, nil
}

// fetchManifest reads and checks the manifest desc names.
func fetchManifest(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor) (*Artifact, error) {
	raw, err := fetch(ctx, target, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.MediaType != ocispec.MediaTypeImageManifest || m.ArtifactType != ArtifactType {
		return nil, blocking.New(blocking.ArtifactNotWorker, "manifest is not an image manifest with artifactType %s", ArtifactType)
	}
	a := &Artifact{Descriptor: desc, Manifest: m}
	a.Descriptor.ArtifactType = m.ArtifactType
	return a, nil
}

// irLayer returns the manifest's one IR layer.
func irLayer(layers []ocispec.Descriptor) (ocispec.Descriptor, error) {
	var found []ocispec.Descriptor
	for _, l := range layers {
		if l.MediaType == IRMediaType {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return ocispec.Descriptor{}, blocking.New(blocking.ArtifactLayersInvalid, "the manifest has %d IR layers, want exactly 1", len(found))
	}
	return found[0], nil
}

// SchemaCheck decodes a fetched IR layer and holds it to the #Worker
// schema, returning the decoded IR or its refusal. It is a parameter, not
// a call, so that oci does not load CUE (issue 42); the one check callers
// pass is schemas.CheckFetchedIR, and TestEveryFetchChecksTheSchema in
// package schemas holds every caller to it.
type SchemaCheck func(irBytes []byte) (*ir.Worker, error)

// errNoSchemaCheck is a program error, not a refusal: a fetch without the
// schema check would let a host believe an IR nothing checked.
var errNoSchemaCheck = errors.New("oci: a fetch needs its schema check (schemas.CheckFetchedIR); nothing was read")

// checkIR checks the IR bytes against the manifest's annotation, then
// with check: canonical, strictly decoded, #Worker.
func (a *Artifact) checkIR(check SchemaCheck) error {
	a.IRDigest = ir.DigestBytes(a.IR)
	if a.Manifest.Annotations[AnnotationIRDigest] != a.IRDigest {
		return blocking.New(blocking.IRAnnotationMismatch, "annotation %s differs from the IR layer's digest", AnnotationIRDigest)
	}
	// Everything downstream trusts the IR's names (pull writes files by
	// them): it must be schema-valid before anything is derived from it.
	// The invariants and the customer-state scan are
	// signing.Conformance's named checks and the host stages' own, so a
	// fetch stops at the schema.
	w, err := check(a.IR)
	if err != nil {
		return err
	}
	if w == nil {
		return errors.New("oci: the schema check returned no IR and no refusal")
	}
	a.Worker = w
	return nil
}

// checkLayers checks the layers are exactly those Layers derives from the
// IR, in order, with the same bytes.
func (a *Artifact) checkLayers() error {
	// Each fetched layer's bytes already match its digest, so comparing
	// bytes with the IR's part is comparing digests, without hashing again.
	want := parts(a.Worker, a.IR)
	if len(want) != len(a.Layers) {
		return blocking.New(blocking.ArtifactLayersInvalid, "the manifest has %d layers, the IR names %d parts", len(a.Layers), len(want))
	}
	for i, w := range want {
		got := a.Layers[i].Descriptor
		if got.MediaType != w.Descriptor.MediaType || !bytes.Equal(a.Layers[i].Data, w.Data) || !maps.Equal(got.Annotations, w.Descriptor.Annotations) {
			return blocking.New(blocking.ArtifactLayersInvalid, "layer %d is not the IR's part %s with its own annotations", i, w.Descriptor.Annotations[AnnotationPart])
		}
	}
	ann := a.Manifest.Annotations
	if ann[ocispec.AnnotationTitle] != a.Worker.Name || ann[ocispec.AnnotationVersion] != a.Worker.Version {
		return blocking.New(blocking.ArtifactLayersInvalid, "the manifest's title or version annotation is not the IR's")
	}
	return nil
}

// fetchConcurrency bounds the layer reads in flight: a registry round trip
// each, so a few at once hide most of the latency.
const fetchConcurrency = 4

// fetchLayers reads every layer, verifying each, a few at a time; the
// IR layer (irDesc), already read, is irData. It returns the first
// refusal or fault in layer order.
func fetchLayers(ctx context.Context, target oras.ReadOnlyTarget, descs []ocispec.Descriptor, irDesc ocispec.Descriptor, irData []byte) ([]Layer, error) {
	layers := make([]Layer, len(descs))
	errs := make([]error, len(descs))
	sem := make(chan struct{}, fetchConcurrency)
	var wg sync.WaitGroup
	for i, d := range descs {
		layers[i].Descriptor = d
		if d.Digest == irDesc.Digest && d.Size == irDesc.Size && d.MediaType == irDesc.MediaType {
			layers[i].Data = irData
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			layers[i].Data, errs[i] = fetch(ctx, target, d)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return layers, nil
}

// fetch reads desc's bytes, bounded by the target's limits (checked
// against the descriptor before reading), verifying size and digest.
func fetch(ctx context.Context, target content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	b, err := readBounded(ctx, target, desc)
	switch {
	case blocking.Refusals(err) != nil:
		return nil, err
	case errors.Is(err, content.ErrTrailingData):
		return nil, blocking.New(blocking.LayerDigestMismatch, "the source sent more bytes for blob %s than its descriptor says", desc.Digest)
	case contentLengthMismatch(err):
		return nil, blocking.New(blocking.LayerDigestMismatch, "the registry's Content-Length for blob %s is not the %d bytes its descriptor says", desc.Digest, desc.Size)
	case Tampered(err):
		return nil, blocking.New(blocking.LayerDigestMismatch, "blob %s does not match its digest", desc.Digest)
	case errors.Is(err, errdef.ErrNotFound):
		return nil, blocking.New(blocking.ArtifactNotFound, "blob %s is missing", desc.Digest)
	case err != nil:
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	return b, nil
}

// Tampered reports whether err says content differs from its descriptor:
// a changed byte, or a blob longer or shorter than described.
func Tampered(err error) bool {
	return errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) ||
		errors.Is(err, content.ErrInvalidDescriptorSize) || errors.Is(err, io.ErrUnexpectedEOF) ||
		contentLengthMismatch(err)
}

// Copy copies the artifact desc from src to dst, tagging it dstTag when
// not empty, with every signature and attestation src holds for it in
// both forms cosign writes (see CopyPlan). It returns what was copied, by
// kind (CopyPlan.Parts).
func Copy(ctx context.Context, src oras.ReadOnlyTarget, dst oras.Target, desc ocispec.Descriptor, dstTag string) ([]string, error) {
	plan, err := PlanCopy(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	if err := plan.Copy(ctx, src, dst, dstTag); err != nil {
		return nil, err
	}
	return plan.Parts(), nil
}

func copyError(err error) error {
	if Tampered(err) {
		return blocking.New(blocking.LayerDigestMismatch, "a blob read during the copy does not match its digest")
	}
	return fmt.Errorf("copying: %w", err)
}
