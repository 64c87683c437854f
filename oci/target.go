package oci

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/oa-dev/oa/blocking"
)

// LocalRegistry is the registry name given to layouts in signature
// payloads (cosign's docker-reference must be a valid image name).
const LocalRegistry = "oa.local"

// Ref is a parsed artifact reference.
type Ref struct {
	// Registry is the registry host[:port]; empty for an OCI image layout.
	Registry string
	// Repository is the repository name (for a layout, its name under
	// $OA_HOME/oci, or the base name of the path given with --oci-layout).
	Repository string
	// Tag and Digest are either or both set, or neither (a bare repository).
	Tag    string
	Digest digest.Digest
	// Layout is the OCI image layout folder; empty for a registry.
	Layout string
	// LayoutPath says Layout was given as a path (--oci-layout) rather
	// than named by Repository under $OA_HOME/oci, or is to be written
	// as one (LocalRef, for a repository whose name reads as a host).
	LayoutPath bool
}

// RefOptions says how references are read.
type RefOptions struct {
	// Home is $OA_HOME; layouts named without a path live in Home/oci.
	Home string
	// Layout says the reference is PATH[:TAG][@DIGEST] of an OCI image
	// layout, as oras's --oci-layout.
	Layout bool
}

var (
	layoutTag     = regexp.MustCompile(`^(.*?)(?::([A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?$`)
	notRepository = regexp.MustCompile(`[^a-z0-9._-]+`)
)

// ParseRef parses s. As in Docker's image names, a first path component
// followed by '/' that has a '.' or ':' or is "localhost" is a registry
// host; anything else names a layout under opts.Home/oci. With
// opts.Layout, s is a layout path.
func ParseRef(s string, opts RefOptions) (Ref, error) {
	rest, dgst, err := splitDigest(s)
	if err != nil {
		return Ref{}, err
	}
	if opts.Layout {
		m := layoutTag.FindStringSubmatch(rest)
		if m == nil || m[1] == "" {
			return Ref{}, blocking.New(blocking.ReferenceInvalid, "an OCI layout reference is PATH[:TAG][@sha256:HEX]")
		}
		return Ref{Repository: layoutRepository(m[1]), Tag: m[2], Digest: dgst, Layout: m[1], LayoutPath: true}, nil
	}
	isHost := startsWithHost(rest)
	name := rest
	if !isHost {
		name = LocalRegistry + "/" + rest
	}
	parsed, err := registry.ParseReference(name)
	if err != nil {
		return Ref{}, blocking.New(blocking.ReferenceInvalid, "%s", refProblem(err))
	}
	r := Ref{Registry: parsed.Registry, Repository: parsed.Repository, Tag: parsed.Reference, Digest: dgst}
	if !isHost {
		r.Registry = ""
		r.Layout = homeLayout(opts.Home, r.Repository)
	}
	return r, nil
}

// startsWithHost reports whether s's first path component names a
// registry host: followed by '/', with a '.' or ':' or "localhost".
func startsWithHost(s string) bool {
	first, _, hasSlash := strings.Cut(s, "/")
	return hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// homeLayout is the folder of repository's OCI layout under home.
func homeLayout(home, repository string) string {
	return filepath.Join(home, "oci", filepath.FromSlash(repository))
}

// LocalRef is repository's OCI layout under home ($OA_HOME/oci/REPO, the
// host's own copy of a release pulled from a registry) pinned to dgst.
// It is built, not parsed from REPO@DIGEST: a repository whose first part
// reads as a registry host (oa.dev/clinic, localhost/clinic) would be
// read as one. Such a reference is also written as its layout path
// (LayoutPath), so that what String renders, which a binding records and
// the CLI is given, reads back with Layout set as the same folder;
// any other is written REPO@DIGEST, as ParseRef reads it under home.
func LocalRef(home, repository string, dgst digest.Digest) (Ref, error) {
	named := registry.Reference{Registry: LocalRegistry, Repository: repository}
	if err := named.ValidateRepository(); err != nil {
		return Ref{}, blocking.New(blocking.ReferenceInvalid, "%s", refProblem(err))
	}
	if err := dgst.Validate(); err != nil || dgst.Algorithm() != digest.SHA256 {
		return Ref{}, blocking.New(blocking.ReferenceInvalid, "the digest must be sha256:<64 lower-case hex>")
	}
	layout := homeLayout(home, repository)
	return Ref{Repository: repository, Digest: dgst, Layout: layout, LayoutPath: startsWithHost(repository)}, nil
}

// layoutRepository derives a valid repository name from a layout path, for
// signature payloads.
func layoutRepository(path string) string {
	base := strings.ToLower(filepath.Base(filepath.Clean(path)))
	clean := notRepository.ReplaceAllString(base, "-")
	clean = strings.Trim(clean, "._-")
	if clean == "" {
		clean = "layout"
	}
	return clean
}

// ParseDigest validates a bare digest argument: sha256:<64 lower-case hex>.
func ParseDigest(s string) (digest.Digest, error) {
	_, d, err := splitDigest("@" + s)
	return d, err
}

// splitDigest splits "X@sha256:HEX" and validates the digest.
func splitDigest(s string) (string, digest.Digest, error) {
	rest, d, found := strings.Cut(s, "@")
	if !found {
		return s, "", nil
	}
	dg, err := digest.Parse(d)
	if err != nil || dg.Algorithm() != digest.SHA256 {
		return "", "", blocking.New(blocking.ReferenceInvalid, "the digest must be sha256:<64 lower-case hex>")
	}
	return rest, dg, nil
}

// refProblem names what is wrong with a reference without repeating it.
func refProblem(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "not HOST/REPO[:TAG][@sha256:HEX] (" + blocking.Redact(msg, nil) + ")"
}

// Name is the image name cosign puts in a signature's docker-reference:
// REGISTRY/REPO, or oa.local/REPO for a layout.
func (r Ref) Name() string {
	if r.Registry == "" {
		return LocalRegistry + "/" + r.Repository
	}
	return r.Registry + "/" + r.Repository
}

// String renders the reference as it would be typed.
func (r Ref) String() string {
	s := r.Repository
	switch {
	case r.Registry != "":
		s = r.Registry + "/" + r.Repository
	case r.LayoutPath:
		s = r.Layout
	}
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest.String()
	}
	return s
}

// WithDigest returns r pinned to d.
func (r Ref) WithDigest(d digest.Digest) Ref {
	r.Digest = d
	return r
}

// Reference is what to resolve in the target: the digest when set, else
// the tag.
func (r Ref) Reference() string {
	if r.Digest != "" {
		return r.Digest.String()
	}
	return r.Tag
}

// RequireDigest refuses a reference without a digest. When resolved is
// known (the tag was looked up), the refusal says which digest to use.
func (r Ref) RequireDigest(resolved digest.Digest) error {
	if r.Digest != "" {
		return nil
	}
	if resolved != "" {
		return blocking.New(blocking.ReferenceNotDigest, "the tag resolves to %s now; re-run with @%s", resolved, resolved)
	}
	return blocking.New(blocking.ReferenceNotDigest, "give the reference as REF@sha256:…")
}

// OpenOptions say how to reach a registry. The zero value follows oras:
// HTTPS with the system roots and the Docker config's credentials, except
// that a loopback registry is tried over HTTPS and falls back to plain
// HTTP when it answers that way.
type OpenOptions struct {
	// PlainHTTP uses plain HTTP (--plain-http).
	PlainHTTP bool
	// HTTPS uses HTTPS even on loopback, with no fallback
	// (--plain-http=false).
	HTTPS bool
	// CAFile is a PEM file of private CA certificates trusted besides the
	// system roots (--ca-file).
	CAFile string
	// Insecure skips TLS verification, for self-signed test registries
	// (--insecure).
	Insecure bool
	// Credentials overrides the Docker config credentials (tests).
	Credentials credentials.Store
	// Create makes a missing OCI layout, for targets that are written to;
	// otherwise a missing layout is artifact_not_found and nothing is made.
	Create bool
	// Limits bound every read from the target; zero fields take the
	// defaults (DefaultLimits).
	Limits Limits
	// RequestTimeout and OperationTimeout, when set, replace the limits'
	// (--request-timeout, --timeout).
	RequestTimeout, OperationTimeout time.Duration
}

// limits are the options' limits with the timeouts given over them, and
// defaults for the rest.
func (o OpenOptions) limits() Limits {
	lim := o.Limits
	if o.RequestTimeout > 0 {
		lim.RequestTimeout = o.RequestTimeout
	}
	if o.OperationTimeout > 0 {
		lim.OperationTimeout = o.OperationTimeout
	}
	return lim.WithDefaults()
}

// Target is an opened artifact store: an OCI layout or a registry
// repository.
type Target interface {
	oras.GraphTarget
}

// Open opens the target r names. A missing layout is created only when
// opts.Create is set.
func Open(ctx context.Context, r Ref, opts OpenOptions) (Target, error) {
	if r.Layout != "" {
		if _, err := os.Stat(filepath.Join(r.Layout, "oci-layout")); err != nil && !opts.Create {
			return nil, blocking.New(blocking.ArtifactNotFound, "there is no OCI layout by that name")
		}
		if err := os.MkdirAll(r.Layout, 0o755); err != nil {
			return nil, fmt.Errorf("creating OCI layout: %w", err)
		}
		return openLayout(r.Layout, opts.limits())
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, blocking.New(blocking.ReferenceInvalid, "%s", refProblem(err))
	}
	client, err := authClient(transportKey{caFile: opts.CAFile, insecure: opts.Insecure, store: opts.Credentials})
	if err != nil {
		return nil, err
	}
	lim := opts.limits()
	repo.PlainHTTP = opts.PlainHTTP
	if !opts.PlainHTTP && !opts.HTTPS && isLoopback(r.Registry) {
		// No scheme chosen: HTTPS, or plain HTTP where the loopback
		// registry answers that way (as oras defaults localhost to HTTP).
		if repo.PlainHTTP, err = speaksPlainHTTP(ctx, r.Registry, lim.RequestTimeout); err != nil {
			return nil, err
		}
	}
	repo.Client = &registryClient{
		inner: client, host: r.Registry,
		request: lim.RequestTimeout, operation: lim.OperationTimeout, deadline: time.Now().Add(lim.OperationTimeout),
		metadataBytes: lim.ManifestBytes,
	}
	return withLimits(repo, lim), nil
}

// limitedRepository is a registry repository that carries the limits its
// reads are held to. Embedding keeps every method of the repository (the
// referrers API, reference fetches, deletes) visible to type assertions.
type limitedRepository struct {
	*remote.Repository
	limits Limits
}

// ReadLimits are the limits the repository's reads are held to.
func (r *limitedRepository) ReadLimits() Limits { return r.limits }

// Fetch refuses a descriptor over the limit for its type before it asks
// the registry for a byte; callers read at most the descriptor's size.
func (r *limitedRepository) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if err := r.limits.Check(desc); err != nil {
		return nil, err
	}
	return r.Repository.Fetch(ctx, desc)
}

// withLimits holds repo's reads to lim: manifests oras-go reads whole are
// bounded by lim.ManifestBytes, everything else by oa's own bounded reads.
func withLimits(repo *remote.Repository, lim Limits) Target {
	lim = lim.WithDefaults()
	repo.MaxMetadataBytes = lim.ManifestBytes
	return &limitedRepository{Repository: repo, limits: lim}
}

// isLoopback reports whether a registry host[:port] is on this machine,
// the only place plain HTTP is used without being asked for (as a
// fallback from HTTPS).
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
