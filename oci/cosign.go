package oci

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
)

// Media types of what cosign stores beside a manifest. Transport knows
// them to bound, read and copy that content; package signing makes and
// verifies it.
const (
	// SimpleSigningMediaType is the media type of a signature layer: a
	// simple-signing payload naming the signed manifest digest.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// DSSEMediaType is the media type of an attestation layer: a DSSE
	// envelope around an in-toto statement.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// BundleMediaType is the artifact type of a sigstore bundle manifest
	// (cosign v3's default format) and the media type of its layer.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// maxCosignManifestSize bounds a cosign `.sig`/`.att` manifest: cosign's
// are a few KiB, and a larger one is not one of ours. Its layers are held
// to the target's Limits.SignatureBytes.
const maxCosignManifestSize = 4 << 20

// dockerManifestMediaType is the manifest type cosign writes with
// COSIGN_DOCKER_MEDIA_TYPES=1; it has the same shape as an OCI manifest.
const dockerManifestMediaType = "application/vnd.docker.distribution.manifest.v2+json"

// SignatureTag is the tag cosign keeps the signatures of manifest d under,
// in the same repository: "sha256-<hex>.sig".
func SignatureTag(d digest.Digest) string { return cosignTagName(d, "sig") }

// AttestationTag is the tag cosign keeps the attestations of manifest d
// under, in the same repository: "sha256-<hex>.att".
func AttestationTag(d digest.Digest) string { return cosignTagName(d, "att") }

// cosignTagName is "<alg>-<hex>.<suffix>".
func cosignTagName(d digest.Digest, suffix string) string {
	return strings.Replace(d.String(), ":", "-", 1) + "." + suffix
}

// CheckSubject refuses a subject that is not named by a sha256 digest.
func CheckSubject(subject ocispec.Descriptor) error {
	if subject.Digest.Validate() != nil || subject.Digest.Algorithm() != digest.SHA256 {
		return blocking.New(blocking.ReferenceInvalid, "the subject digest must be sha256:<64 lower-case hex>")
	}
	return nil
}

// CosignManifest is the manifest a cosign `.sig` or `.att` tag names,
// read and checked against its digest but not believed.
type CosignManifest struct {
	// Found is false (and the rest empty) when the tag does not exist.
	Found bool
	// TooLarge says the manifest is larger than any cosign writes; it was
	// not read, and Descriptor and Layers are empty.
	TooLarge bool
	// Parsed is true when the manifest is an image manifest (OCI or
	// Docker) that decoded; Layers are then its layers.
	Parsed     bool
	Descriptor ocispec.Descriptor
	Layers     []ocispec.Descriptor
}

// ReadCosignManifest reads the manifest tag names in target in one
// request, bounded and checked against its digest. A missing tag is
// Found false and an oversized manifest TooLarge, neither an error; any
// other error is oras-go's as it is, for the caller to word (Tampered
// says when it means the content is not what it claims).
func ReadCosignManifest(ctx context.Context, target oras.ReadOnlyTarget, tag string) (CosignManifest, error) {
	desc, raw, err := oras.FetchBytes(ctx, target, tag, oras.FetchBytesOptions{MaxBytes: maxCosignManifestSize})
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return CosignManifest{}, nil
	case errors.Is(err, errdef.ErrSizeExceedsLimit):
		return CosignManifest{Found: true, TooLarge: true, Descriptor: desc}, nil
	case err != nil:
		return CosignManifest{}, err
	}
	layers, parsed := parseCosignManifest(desc, raw)
	return CosignManifest{Found: true, Parsed: parsed, Descriptor: desc, Layers: layers}, nil
}

// parseCosignManifest decodes a cosign manifest. A manifest of another
// kind or not JSON has no usable layers (parsed false).
func parseCosignManifest(desc ocispec.Descriptor, raw []byte) (layers []ocispec.Descriptor, parsed bool) {
	if desc.MediaType != ocispec.MediaTypeImageManifest && desc.MediaType != dockerManifestMediaType {
		return nil, false
	}
	var m ocispec.Manifest
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m.Layers, true
}
