package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// Artifact types of the fleet's documents. Each is an image-spec 1.1
// manifest with the empty config and one layer, the document's canonical
// JSON, of media type ARTIFACT_TYPE+json.
const (
	EnvelopeArtifactType    = "application/vnd.oa.fleet.envelope.v1"
	RevocationsArtifactType = "application/vnd.oa.fleet.revocations.v1"
	StatusArtifactType      = "application/vnd.oa.fleet.status.v1"
)

// Annotations of a document layer.
const (
	// AnnotationSignature is the base64 signature (ECDSA P-256 over the
	// SHA-256 of the layer's bytes, as cosign signs).
	AnnotationSignature = "dev.oa.fleet.signature"
	// AnnotationKeyID is the signing key's id, "sha256:<hex>" of its PKIX
	// encoding.
	AnnotationKeyID = "dev.oa.fleet.key"
	// AnnotationPublicKey carries the signer's public key PEM on a host
	// status, which a fleet file may pin.
	AnnotationPublicKey = "dev.oa.fleet.public-key"
)

// Size limits of what is read back.
const (
	maxManifest = 64 << 10
	maxDocument = 4 << 20
)

// maxEmbedded bounds a payload embedded in its manifest's layer
// descriptor (image-spec's "data" member, base64): every document the
// fleet writes is far smaller, and a manifest with it stays well under
// maxManifest. A reader then has the document with the manifest, one
// request, instead of a second request for the blob, which a registry
// serves at far more cost than a manifest (distribution/v3 allocates a
// 4 MiB read buffer per blob it serves; see docs/PERFORMANCE.md). The
// blob is pushed all the same: the manifest refers to it, and readers
// of old documents fetch it.
const maxEmbedded = 16 << 10

// document is a signed document read from the registry, not yet verified.
type document struct {
	Desc      ocispec.Descriptor
	Payload   []byte
	Signature []byte
	KeyID     string
	PublicKey []byte
}

// errMalformed marks a tag that holds something other than a document of
// the expected type.
var errMalformed = errors.New("fleet: not a document of the expected type")

// docManifest renders the manifest of a document: no timestamps, so one
// payload and signature always give the same bytes.
func docManifest(artifactType string, layer ocispec.Descriptor) ([]byte, error) {
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	}
	return json.Marshal(m)
}

// pushDocument signs payload (canonical JSON of v) with sign, pushes it as
// a document of artifactType and tags it. The blobs are pushed before the
// manifest, and the tag moves only when the manifest is whole.
func pushDocument(ctx context.Context, target oras.Target, artifactType, tag string, payload, sig []byte, keyID string, publicPEM []byte) (ocispec.Descriptor, error) {
	return pushHinted(ctx, target, artifactType, tag, payload, sig, keyID, publicPEM, nil, false)
}

// pushHinted is pushDocument with hint annotations on the layer: the
// fields a reader needs to rebuild the payload it expects (see
// readHinted). They are not signed and never believed, only tried. With
// configPresent (the caller pushed the empty config already) the layer,
// a payload just signed and so new, is uploaded without asking first:
// two requests fewer per document when publishing a fleet.
func pushHinted(ctx context.Context, target oras.Target, artifactType, tag string, payload, sig []byte, keyID string, publicPEM []byte, hints map[string]string, configPresent bool) (ocispec.Descriptor, error) {
	layer := content.NewDescriptorFromBytes(artifactType+"+json", payload)
	if len(payload) <= maxEmbedded {
		layer.Data = payload
	}
	layer.Annotations = map[string]string{
		AnnotationSignature: base64.StdEncoding.EncodeToString(sig),
		AnnotationKeyID:     keyID,
	}
	for k, v := range hints {
		layer.Annotations[k] = v
	}
	if publicPEM != nil {
		layer.Annotations[AnnotationPublicKey] = string(publicPEM)
	}
	if configPresent {
		if err := target.Push(ctx, layer, bytes.NewReader(payload)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return ocispec.Descriptor{}, fmt.Errorf("pushing %s: %w", tag, err)
		}
	} else {
		for _, b := range []struct {
			desc ocispec.Descriptor
			data []byte
		}{{ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data}, {layer, payload}} {
			if _, err := oci.PushIfMissing(ctx, target, b.desc, b.data); err != nil {
				return ocispec.Descriptor{}, err
			}
		}
	}
	manifest, err := docManifest(artifactType, layer)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := oras.TagBytes(ctx, target, ocispec.MediaTypeImageManifest, manifest, tag)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	return desc, nil
}

// readDocument reads the document tagged tag. It returns nil, nil when the
// tag does not exist, errMalformed when it holds something else, and a
// fault when the registry cannot be read.
func readDocument(ctx context.Context, target oras.ReadOnlyTarget, artifactType, tag string) (*document, error) {
	return readHinted(ctx, target, artifactType, tag, nil)
}

// readHinted is readDocument, but first asks guess for the payload the
// caller expects given the layer's hint annotations: when its bytes have
// the layer's digest they are the layer (content addressing makes them
// so) and the blob is not fetched, so an unchanged document costs one
// manifest request; so does a document whose manifest embeds its layer.
// The signature is checked by the caller either way.
func readHinted(ctx context.Context, target oras.ReadOnlyTarget, artifactType, tag string, guess func(hints map[string]string) []byte) (*document, error) {
	desc, raw, err := oras.FetchBytes(ctx, target, tag, oras.FetchBytesOptions{MaxBytes: maxManifest})
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return nil, nil
	case errors.Is(err, errdef.ErrSizeExceedsLimit) || errors.Is(err, content.ErrMismatchedDigest):
		return nil, errMalformed
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	var m ocispec.Manifest
	if json.Unmarshal(raw, &m) != nil || m.MediaType != ocispec.MediaTypeImageManifest || m.ArtifactType != artifactType || len(m.Layers) != 1 {
		return nil, errMalformed
	}
	l := m.Layers[0]
	if l.MediaType != artifactType+"+json" || l.Size > maxDocument || l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256 {
		return nil, errMalformed
	}
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[AnnotationSignature])
	if err != nil {
		return nil, errMalformed
	}
	if guess != nil {
		if p := guess(l.Annotations); p != nil && int64(len(p)) == l.Size && digest.FromBytes(p) == l.Digest {
			return newDocument(desc, p, sig, l.Annotations), nil
		}
	}
	// Embedded bytes of the layer's digest are the layer (content
	// addressing); other embedded bytes are ignored and the blob read.
	if len(l.Data) > 0 && int64(len(l.Data)) == l.Size && digest.FromBytes(l.Data) == l.Digest {
		return newDocument(desc, l.Data, sig, l.Annotations), nil
	}
	payload, err := content.FetchAll(ctx, target, l)
	switch {
	case errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, errdef.ErrNotFound):
		return nil, errMalformed
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	return newDocument(desc, payload, sig, l.Annotations), nil
}

// newDocument is the document of manifest desc whose layer, annotated
// with annotations, holds payload.
func newDocument(desc ocispec.Descriptor, payload, sig []byte, annotations map[string]string) *document {
	d := &document{Desc: desc, Payload: payload, Signature: sig, KeyID: annotations[AnnotationKeyID]}
	if pem, ok := annotations[AnnotationPublicKey]; ok {
		d.PublicKey = []byte(pem)
	}
	return d
}

// verifiedBy returns the first of keys whose signature d carries, or nil.
func (d *document) verifiedBy(keys []*signing.Verifier) *signing.Verifier {
	for _, k := range keys {
		if k != nil && k.VerifyBytes(d.Signature, d.Payload) == nil {
			return k
		}
	}
	return nil
}

// decode decodes d's payload strictly into out and checks it is canonical:
// a document is exactly the bytes that were signed.
func (d *document) decode(out any) error {
	if canonical.DecodeStrict(d.Payload, out) != nil {
		return errMalformed
	}
	again, err := canonical.Marshal(out)
	if err != nil || !bytes.Equal(again, d.Payload) {
		return errMalformed
	}
	return nil
}
