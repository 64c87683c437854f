package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/blocking"
)

// Default size limits. Manifests, the IR and signature material are a few
// KiB when oa or cosign writes them, so 4 MiB (what registries accept for a
// manifest) leaves room without letting a hostile source make oa hold much.
// Components and documents are CUE source and Markdown: 256 MiB each and
// 1 GiB in all is far past any real bundle.
const (
	DefaultManifestBytes  = 4 << 20
	DefaultIRBytes        = 4 << 20
	DefaultSignatureBytes = 4 << 20
	DefaultComponentBytes = 256 << 20
	DefaultTotalBytes     = 1 << 30
)

// Default registry deadlines. One request (dialling, TLS, the answer and
// its whole body) gets a minute: a manifest takes milliseconds and the
// largest component a host reads by default (256 MiB) needs about 4.5
// MB/s. One operation (everything a command does with one repository it
// opened) gets ten minutes. A registry that stalls or trickles is refused
// registry_timeout at the first one reached.
const (
	DefaultRequestTimeout   = time.Minute
	DefaultOperationTimeout = 10 * time.Minute
)

// Limits bound what oa reads from a registry or an OCI layout. Every
// fetch checks the descriptor's size against the limit for its media type
// before it reads a byte, and reads no more than the descriptor claims (so
// a source that streams more, or forever, is cut off there and refused).
// A zero field takes its default.
type Limits struct {
	// ManifestBytes bounds a manifest, an index and a layout's index.json.
	ManifestBytes int64
	// IRBytes bounds the Worker IR layer.
	IRBytes int64
	// SignatureBytes bounds a signature, attestation or sigstore bundle
	// layer, a config blob, and any layer of a type oa does not know.
	SignatureBytes int64
	// ComponentBytes bounds each evaluator component and document layer.
	ComponentBytes int64
	// TotalBytes bounds the sum of one artifact's layers.
	TotalBytes int64
	// RequestTimeout bounds one registry request, body included.
	RequestTimeout time.Duration
	// OperationTimeout bounds everything done with one opened registry
	// repository, from Open on.
	OperationTimeout time.Duration
}

// DefaultLimits are the limits a host without a `limits` policy section
// uses.
func DefaultLimits() Limits {
	return Limits{
		ManifestBytes:  DefaultManifestBytes,
		IRBytes:        DefaultIRBytes,
		SignatureBytes: DefaultSignatureBytes,
		ComponentBytes: DefaultComponentBytes,
		TotalBytes:     DefaultTotalBytes,

		RequestTimeout:   DefaultRequestTimeout,
		OperationTimeout: DefaultOperationTimeout,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int64 }{
		{&l.ManifestBytes, &d.ManifestBytes}, {&l.IRBytes, &d.IRBytes}, {&l.SignatureBytes, &d.SignatureBytes},
		{&l.ComponentBytes, &d.ComponentBytes}, {&l.TotalBytes, &d.TotalBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	if l.OperationTimeout <= 0 {
		l.OperationTimeout = d.OperationTimeout
	}
	return l
}

// manifestTypes are the media types read as manifests.
var manifestTypes = map[string]bool{
	ocispec.MediaTypeImageManifest:                              true,
	ocispec.MediaTypeImageIndex:                                 true,
	dockerManifestMediaType:                                     true,
	"application/vnd.docker.distribution.manifest.list.v2+json": true,
}

// isManifest reports whether mediaType is read as a manifest.
func isManifest(mediaType string) bool { return manifestTypes[mediaType] }

// limitFor is the limit for content of mediaType, with the policy field
// that sets it (for the refusal's fix line).
func (l Limits) limitFor(mediaType string) (int64, string) {
	l = l.WithDefaults()
	switch {
	case isManifest(mediaType):
		return l.ManifestBytes, "manifest_bytes"
	case mediaType == IRMediaType:
		return l.IRBytes, "ir_bytes"
	case mediaType == ComponentMediaType || mediaType == DocumentMediaType:
		return l.ComponentBytes, "component_bytes"
	}
	return l.SignatureBytes, "signature_bytes"
}

// Check refuses desc before anything is read, or any path is built from
// it: descriptor_invalid when its digest is not a valid digest (such as
// one made to name a path) or its size is negative; over the limit for
// its media type, manifest_too_large for a manifest, layer_too_large
// otherwise, naming the media type, the claimed size, the limit and the
// policy field that raises it.
func (l Limits) Check(desc ocispec.Descriptor) error {
	if err := CheckDescriptor(desc); err != nil {
		return err
	}
	limit, field := l.limitFor(desc.MediaType)
	if desc.Size <= limit {
		return nil
	}
	return tooLarge(desc.MediaType, desc.Size, limit, field)
}

// CheckDescriptor refuses a descriptor no honest writer makes: a digest
// that does not validate (its algorithm and encoding; so never a path) or
// a negative size. It repeats neither.
func CheckDescriptor(desc ocispec.Descriptor) error {
	if desc.Digest.Validate() != nil {
		return blocking.New(blocking.DescriptorInvalid, "%s has a digest that is not a valid digest", mediaTypeName(desc.MediaType))
	}
	if desc.Size < 0 {
		return blocking.New(blocking.DescriptorInvalid, "%s has a negative size", mediaTypeName(desc.MediaType))
	}
	return nil
}

// tooLarge is the refusal for content of mediaType claiming size bytes
// over limit.
func tooLarge(mediaType string, size, limit int64, field string) error {
	code := blocking.LayerTooLarge
	if isManifest(mediaType) {
		code = blocking.ManifestTooLarge
	}
	return blocking.New(code, "%s claims %d bytes, over the limit of %d; raise limits.%s in the host policy if it is genuine",
		mediaTypeName(mediaType), size, limit, field)
}

// knownTypes are the media types a refusal may name: a type from the
// source that oa does not know is input, and is not repeated.
var knownTypes = map[string]bool{
	IRMediaType: true, ComponentMediaType: true, DocumentMediaType: true, BundleMediaType: true,
	SimpleSigningMediaType: true, DSSEMediaType: true, ocispec.MediaTypeEmptyJSON: true,
	ocispec.MediaTypeImageConfig: true,
}

// mediaTypeName names mediaType for a refusal: "a layer of type T" for a
// type oa knows, else without the type.
func mediaTypeName(mediaType string) string {
	switch {
	case isManifest(mediaType):
		return "a manifest of type " + mediaType
	case knownTypes[mediaType]:
		return "a layer of type " + mediaType
	}
	return "a layer of a media type oa does not read"
}

// checkTotal refuses layers whose sizes add up to more than TotalBytes.
func (l Limits) checkTotal(layers []ocispec.Descriptor) error {
	l = l.WithDefaults()
	var sum int64
	for _, d := range layers {
		if err := l.Check(d); err != nil {
			return err
		}
		sum += d.Size
		if sum > l.TotalBytes {
			return blocking.New(blocking.LayerTooLarge, "the artifact's layers add up to more than the limit of %d bytes; raise limits.total_bytes in the host policy if it is genuine", l.TotalBytes)
		}
	}
	return nil
}

// limited is a target that carries the limits its reads are held to.
type limited interface {
	ReadLimits() Limits
}

// LimitsOf returns the limits t's reads are held to: those it was opened
// with, or the defaults.
func LimitsOf(t any) Limits {
	if l, ok := t.(limited); ok {
		return l.ReadLimits().WithDefaults()
	}
	return DefaultLimits()
}

// readBounded fetches desc from target, refusing it before reading when
// its descriptor is over the target's limit, and reads at most desc.Size
// bytes, verified against size and digest (content.ReadAll).
func readBounded(ctx context.Context, target content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	if err := LimitsOf(target).Check(desc); err != nil {
		return nil, err
	}
	rc, err := target.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return content.ReadAll(rc, desc)
}

// FetchBlob reads the blob desc names from target, bounded by the
// target's limits and verified against its size and digest. It is the
// read for callers outside this package (content.FetchAll trusts the
// descriptor's size).
func FetchBlob(ctx context.Context, target content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	return fetch(ctx, target, desc)
}

// sizeRefusal maps oras-go's "over MaxBytes" error to manifest_too_large.
func sizeRefusal(err error, limit int64) error {
	if errors.Is(err, errdef.ErrSizeExceedsLimit) {
		return blocking.New(blocking.ManifestTooLarge, "the manifest is over the limit of %d bytes; raise limits.manifest_bytes in the host policy if it is genuine", limit)
	}
	return nil
}

// copyOptions are oras.CopyGraph's options held to lim: manifests read
// whole are bounded, and every node is checked against its limit (and the
// artifact's layers against the total) before it is copied.
func copyOptions(lim Limits) oras.CopyGraphOptions {
	lim = lim.WithDefaults()
	opts := oras.DefaultCopyGraphOptions
	opts.MaxMetadataBytes = lim.ManifestBytes
	// A manifest's children are checked as descriptors before oras-go
	// builds a request or a path from them (it asks the destination
	// whether it has each before PreCopy sees it).
	opts.FindSuccessors = func(ctx context.Context, fetcher content.Fetcher, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		succ, err := content.Successors(ctx, fetcher, desc)
		if err != nil {
			return nil, err
		}
		for _, d := range succ {
			if err := CheckDescriptor(d); err != nil {
				return nil, err
			}
		}
		return succ, nil
	}
	var total atomic.Int64
	opts.PreCopy = func(_ context.Context, desc ocispec.Descriptor) error {
		if err := lim.Check(desc); err != nil {
			return err
		}
		if !isManifest(desc.MediaType) {
			// oras-go calls PreCopy from several goroutines.
			if total.Add(desc.Size) > lim.TotalBytes {
				return blocking.New(blocking.LayerTooLarge, "the copy's blobs add up to more than the limit of %d bytes; raise limits.total_bytes in the host policy if it is genuine", lim.TotalBytes)
			}
		}
		return nil
	}
	return opts
}

// errLimitRead says a bounded reader was asked for more than it allows.
var errLimitRead = fmt.Errorf("read past the size limit")

// boundedReader reads at most n bytes of r and fails (rather than ending
// quietly) when r has more: a file or stream longer than its bound is an
// error, never silently truncated.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n < 0 {
		return 0, errLimitRead
	}
	if int64(len(p)) > b.n+1 {
		p = p[:b.n+1]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if b.n < 0 {
		return n, errLimitRead
	}
	return n, err
}

// readFileBounded reads all of r, refusing with errLimitRead past limit.
func readFileBounded(r io.Reader, limit int64) ([]byte, error) {
	return io.ReadAll(&boundedReader{r: r, n: limit})
}
