package signing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
)

// Cosign's storage format: the annotation on the layers of a
// `sha256-<hex>.sig` or `.att` manifest (their media types are oci's).
const (
	// SignatureAnnotation carries the base64 signature over a layer; it is
	// empty on attestation layers, whose DSSE envelope holds the signature.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
)

// cosignConfigMediaType is the config media type cosign v2 writes by
// default (without COSIGN_DOCKER_MEDIA_TYPES).
const cosignConfigMediaType = "application/vnd.oci.image.config.v1+json"

// cosignZeroTime is how go-containerregistry renders a zero timestamp.
const cosignZeroTime = "0001-01-01T00:00:00Z"

// signTag writes a publisher signature over the manifest subject into target
// in cosign's format: a simple-signing payload naming repository and
// subject.Digest, signed by s, as a layer of the `sha256-<hex>.sig`
// manifest. repository is the docker-reference put in the payload (for
// example "127.0.0.1:5000/oa/clinic", or "oa.local/clinic" for a layout);
// verifiers do not check it, but it must be a valid image name.
//
// Like cosign, signTag appends to an existing signature manifest and moves the
// tag; a signature by the same key over the same payload is not added
// twice. The superseded manifest is deleted when target can delete. signTag
// returns the descriptor of the signature manifest now tagged.
func signTag(ctx context.Context, target oras.Target, repository string, subject ocispec.Descriptor, s *Signer) (ocispec.Descriptor, error) {
	ref, err := subjectName(repository, subject)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	pl, err := payload.Cosign{Image: ref}.MarshalJSON()
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encoding simple-signing payload: %w", err)
	}
	sig, err := s.sv.SignMessage(bytes.NewReader(pl))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("signing: %w", err)
	}
	layer := newCosignLayer(oci.SimpleSigningMediaType, pl, map[string]string{
		SignatureAnnotation: base64.StdEncoding.EncodeToString(sig),
	})
	dup := func(l ocispec.Descriptor, _ []byte) bool { return sameSignature(l, pl, s.verifier) }
	return appendCosignLayer(ctx, target, oci.SignatureTag(subject.Digest), subject.Digest, layer, dup)
}

// subjectName checks subject and repository and returns repository@digest
// as cosign parses it.
func subjectName(repository string, subject ocispec.Descriptor) (name.Digest, error) {
	if err := oci.CheckSubject(subject); err != nil {
		return name.Digest{}, err
	}
	ref, err := name.NewDigest(repository + "@" + subject.Digest.String())
	if err != nil {
		return name.Digest{}, blocking.New(blocking.ReferenceInvalid, "the repository name is not a valid image name")
	}
	return ref, nil
}

// sameSignature reports whether existing layer l is a signature by v over
// exactly pl, as cosign's duplicate detector decides.
func sameSignature(l ocispec.Descriptor, pl []byte, v *Verifier) bool {
	if l.MediaType != oci.SimpleSigningMediaType || l.Digest != digest.FromBytes(pl) {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return false
	}
	return v.v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(pl)) == nil
}

// cosignLayer is one layer to add to a cosign manifest, with its bytes.
type cosignLayer struct {
	desc ocispec.Descriptor
	blob []byte
}

// newCosignLayer describes blob as a layer with annotations.
func newCosignLayer(mediaType string, blob []byte, annotations map[string]string) cosignLayer {
	d := content.NewDescriptorFromBytes(mediaType, blob)
	d.Annotations = annotations
	return cosignLayer{desc: d, blob: blob}
}

// duplicateFunc reports whether an existing layer (with its verified
// bytes) already says what the new layer would.
type duplicateFunc func(existing ocispec.Descriptor, blob []byte) bool

// appendCosignLayer adds layer to the manifest tagged tag (creating it when
// missing), moves the tag, and deletes the superseded manifest when that is
// safe. It changes nothing when dup finds the layer already there.
func appendCosignLayer(ctx context.Context, target oras.Target, tag string, subject digest.Digest, layer cosignLayer, dup duplicateFunc) (ocispec.Descriptor, error) {
	old, err := readCosignImage(ctx, target, tag)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	for i, l := range old.layers {
		if dup(l, old.blobs[i]) {
			return old.desc, nil
		}
	}
	desc, err := writeCosignImage(ctx, target, tag, append(old.layers, layer.desc), layer)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if old.found && old.desc.Digest != desc.Digest && old.onlyFor(subject) {
		deleteSuperseded(ctx, target, old.desc)
	}
	return desc, nil
}

// writeCosignImage pushes the new layer, the config and the manifest over
// layers, and tags the manifest.
func writeCosignImage(ctx context.Context, target oras.Target, tag string, layers []ocispec.Descriptor, added cosignLayer) (ocispec.Descriptor, error) {
	if _, err := oci.PushIfMissing(ctx, target, added.desc, added.blob); err != nil {
		return ocispec.Descriptor{}, err
	}
	cfg, err := cosignConfig(layers)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	cfgDesc := content.NewDescriptorFromBytes(cosignConfigMediaType, cfg)
	if _, err := oci.PushIfMissing(ctx, target, cfgDesc, cfg); err != nil {
		return ocispec.Descriptor{}, err
	}
	manifest, err := cosignManifest(cfgDesc, layers)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := oras.TagBytes(ctx, target, ocispec.MediaTypeImageManifest, manifest, tag)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing cosign manifest: %w", err)
	}
	return desc, nil
}

// deleteSuperseded removes the manifest a moved tag used to name. It is
// best effort: a registry that refuses deletes keeps an untagged manifest,
// which is harmless.
func deleteSuperseded(ctx context.Context, target oras.Target, old ocispec.Descriptor) {
	if d, ok := target.(content.Deleter); ok {
		_ = d.Delete(ctx, old)
	}
}

// ggcrDescriptor is a descriptor with go-containerregistry's field order,
// so that manifests are byte for byte what cosign writes.
type ggcrDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Size        int64             `json:"size"`
	Digest      digest.Digest     `json:"digest"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ggcrManifest is an image manifest as go-containerregistry marshals it.
type ggcrManifest struct {
	SchemaVersion int64            `json:"schemaVersion"`
	MediaType     string           `json:"mediaType,omitempty"`
	Config        ggcrDescriptor   `json:"config"`
	Layers        []ggcrDescriptor `json:"layers"`
}

// ggcrHistory is one history entry of an empty-image config.
type ggcrHistory struct {
	Created string `json:"created"`
}

// ggcrRootFS lists the uncompressed layer digests.
type ggcrRootFS struct {
	Type    string          `json:"type"`
	DiffIDs []digest.Digest `json:"diff_ids"`
}

// ggcrConfig is the config of go-containerregistry's empty image with
// layers appended, the config cosign writes.
type ggcrConfig struct {
	Architecture string        `json:"architecture"`
	Created      string        `json:"created"`
	History      []ggcrHistory `json:"history,omitempty"`
	OS           string        `json:"os"`
	RootFS       ggcrRootFS    `json:"rootfs"`
	Config       struct{}      `json:"config"`
}

// cosignConfig renders the config for layers: one history entry and one
// diff id per layer (cosign's layers are uncompressed, so the diff id is
// the layer digest).
func cosignConfig(layers []ocispec.Descriptor) ([]byte, error) {
	cfg := ggcrConfig{Created: cosignZeroTime, RootFS: ggcrRootFS{Type: "layers", DiffIDs: []digest.Digest{}}}
	for _, l := range layers {
		cfg.History = append(cfg.History, ggcrHistory{Created: cosignZeroTime})
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.Digest)
	}
	return json.Marshal(cfg)
}

// cosignManifest renders the OCI image manifest over config and layers.
func cosignManifest(config ocispec.Descriptor, layers []ocispec.Descriptor) ([]byte, error) {
	m := ggcrManifest{SchemaVersion: 2, MediaType: ocispec.MediaTypeImageManifest, Config: toGGCR(config)}
	m.Layers = make([]ggcrDescriptor, len(layers))
	for i, l := range layers {
		m.Layers[i] = toGGCR(l)
	}
	return json.Marshal(m)
}

// toGGCR keeps the fields cosign's descriptors carry.
func toGGCR(d ocispec.Descriptor) ggcrDescriptor {
	return ggcrDescriptor{MediaType: d.MediaType, Size: d.Size, Digest: d.Digest, Annotations: d.Annotations}
}
