// Package audit exports a host's whole integrity chain for one deployment
// as one self-contained bundle, and verifies such a bundle offline with
// only the publisher, authority and host public keys an auditor trusts:
// artifact → Worker IR → publisher signature → conformance attestation →
// admission → signed registry and connections → projection → capability
// plan → binding → receipts and the host's signed head checkpoint.
//
// A bundle is a tar of an OCI image layout (what oras, crane and skopeo
// read): the worker artifact with its cosign .sig and .att manifests,
// tagged "release", and an audit manifest (artifactType
// application/vnd.oa.audit.v1, subject the worker artifact) tagged
// "audit", whose layers are the host's documents, canonical JSON or the
// host's CUE files byte for byte, each titled by its document name.
//
// Verification rebuilds a host in a temporary folder from the bundle
// (the auditor's host key as its key) and runs the host's own verifiers
// on it — signing.VerifyChain, admit's admission status, resolve's registry
// signature and plan resolution, bind's binding verification and
// comparison, ledger.CheckChain — so there is one copy of each check.
// It sits after the coordinator in the flow and reads the record through
// package ledger, not the engine; only cmd/oa imports it.
//
// Verify (VerifyWithLimits) unpacks the tar under Limits (entries, bytes per
// entry and document, manifest bytes, bytes in all; each header checked
// before its bytes are read; only layout names, regular files and folders,
// through os.Root into a fresh folder), refusing audit_bundle_too_large or
// audit_bundle_invalid with the entry named. Checkpoints, runs and receipts
// are written by Export from streamDump and read back a row at a time
// into the rebuilt store, believed only if the rows rebuild the document's
// exact canonical bytes, so memory does not grow with history. The auditor's
// own trusted roots verify identities; the bundle's trusted roots only
// rebuild the policy. See docs/AUDIT.md.
package audit

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	orasoci "oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ledger"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/projection"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/signing"
)

// Bundle format.
const (
	// ArtifactType is the audit manifest's artifactType.
	ArtifactType = "application/vnd.oa.audit.v1"
	// AuditTag tags the audit manifest; ReleaseTag the worker artifact.
	AuditTag   = "audit"
	ReleaseTag = "release"
	// HostType is the type of the host document.
	HostType = "oa.audit-host/v1"
)

// Documents of a bundle: the audit manifest's layer titles.
const (
	DocHost               = "host.json"
	DocPolicy             = "policy.cue"
	DocRegistry           = "registry.cue"
	DocAdmissions         = "admissions.json"
	DocRevocations        = "revocations.json"
	DocRegistrySignatures = "registry-signatures.json"
	DocConnections        = "connections.json"
	DocBindings           = "bindings.json"
	DocCheckpoints        = "checkpoints.json"
	DocOtherRecords       = "other-records.json"
	DocRuns               = "runs.json"
	DocReceipts           = "receipts.json"
	DocCheckpointFile     = "checkpoint.json"
	DocProjection         = "projection.json"
	DocPlan               = "plan.json"
	// DocTeachRequests holds the deployment's signed teach requests
	// (attention.SignedTeachRequest); a bundle from before teach
	// requests has none.
	DocTeachRequests = "teach-requests.json"
	// DocDecisions holds the signed decisions on the deployment's
	// attention items (host.SignedDecision); a bundle of a host whose
	// policy names no persons, or from before decisions were signed, has
	// none.
	DocDecisions = "decisions.json"
	// DocTrustedRoots holds the trusted roots the policy names for the
	// signers it trusts by certificate identity (TrustedRootDoc); only
	// in bundles of such policies.
	DocTrustedRoots = "trusted-roots.json"
	// DocLogCheckpoint is the host's transparency log's newest
	// checkpoint its witnesses cosigned, with their cosignatures (else
	// its newest checkpoint): a c2sp.org/tlog-checkpoint signed note. A
	// bundle of a host with no log has none.
	DocLogCheckpoint = "log-checkpoint.txt"
	// DocWitnessPolicy is the c2sp.org/tlog-policy text the policy's
	// witnessing policy_file names, as the host read it (the policy's
	// digest covers it); only in bundles of such policies.
	DocWitnessPolicy = "witness-policy.txt"
)

// optionalDocs are the documents a bundle has only when it needs them:
// the bundle of a host that trusts keys only stays what it was. Teach
// requests are missing from bundles made before they existed.
var optionalDocs = map[string]bool{DocTrustedRoots: true, DocTeachRequests: true, DocDecisions: true, DocLogCheckpoint: true, DocWitnessPolicy: true}

// TrustedRootDoc is one trusted root of the host's policy: the policy's
// trusted_root string, the sha256 of the file as the policy read it, and
// its bytes. The verifier rebuilds the host with these bytes (the policy
// digest, which the host-signed admission names, covers their digests),
// never with a file of the auditor's; the auditor's own trusted root is
// what the signatures are verified with.
type TrustedRootDoc struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	Bytes  []byte `json:"bytes"`
}

// documents lists every document in layer order with its media type.
var documents = []struct{ name, mediaType string }{
	{DocHost, "application/vnd.oa.audit.host.v1+json"},
	{DocPolicy, "application/vnd.oa.audit.policy.v1+cue"},
	{DocTrustedRoots, "application/vnd.oa.audit.trusted-roots.v1+json"},
	{DocWitnessPolicy, "application/vnd.oa.audit.witness-policy.v1+text"},
	{DocRegistry, "application/vnd.oa.audit.registry.v1+cue"},
	{DocAdmissions, "application/vnd.oa.audit.admissions.v1+json"},
	{DocRevocations, "application/vnd.oa.audit.revocations.v1+json"},
	{DocRegistrySignatures, "application/vnd.oa.audit.registry-signatures.v1+json"},
	{DocConnections, "application/vnd.oa.audit.connections.v1+json"},
	{DocBindings, "application/vnd.oa.audit.bindings.v1+json"},
	{DocCheckpoints, "application/vnd.oa.audit.checkpoints.v1+json"},
	{DocOtherRecords, "application/vnd.oa.audit.other-records.v1+json"},
	{DocRuns, "application/vnd.oa.audit.runs.v1+json"},
	{DocReceipts, "application/vnd.oa.audit.receipts.v1+json"},
	{DocCheckpointFile, "application/vnd.oa.audit.checkpoint-file.v1+json"},
	{DocProjection, "application/vnd.oa.audit.projection.v1+json"},
	{DocPlan, "application/vnd.oa.audit.plan.v1+json"},
	{DocTeachRequests, "application/vnd.oa.audit.teach-requests.v1+json"},
	{DocDecisions, "application/vnd.oa.audit.decisions.v1+json"},
	{DocLogCheckpoint, "application/vnd.oa.audit.log-checkpoint.v1+note"},
}

// HostDoc names what the bundle is of. Its keys are data for the auditor
// to compare with the keys they trust; verify never trusts them (the
// receipt key is trusted only as the host-signed checkpoint pins it).
type HostDoc struct {
	Type             string    `json:"type"`
	Host             string    `json:"host"`
	Deployment       string    `json:"deployment"`
	ArtifactDigest   string    `json:"artifactDigest"`
	HostPublicKey    string    `json:"hostPublicKey"`
	ReceiptPublicKey string    `json:"receiptPublicKey"`
	ExportedAt       time.Time `json:"exportedAt"`
	// LogPublicKey is the host's log key (keys/log.pub), when the host
	// has a log: data, as the other keys; verify checks the log
	// checkpoint with it and holds its root to the bundle's receipts.
	LogPublicKey string `json:"logPublicKey,omitempty"`
}

// ExportOptions say what to export.
type ExportOptions struct {
	// Home is the host folder ($OA_HOME).
	Home string
	// Deployment is the bound deployment; empty means the only one.
	Deployment string
	// Now is the export time recorded (the manifest's created time).
	Now time.Time
	// Registry is how the bound release's registry is reached (TLS,
	// credentials); the host policy's limits apply over it.
	Registry oci.OpenOptions
	// Progress, when set, is told each step as it starts, one line each
	// (oa audit export shows them on a terminal): the release copied, the
	// record read with how many runs and receipts, the tar written.
	Progress func(format string, args ...any)
}

// Summary says what was exported.
type Summary struct {
	Deployment     string `json:"deployment"`
	ArtifactDigest string `json:"artifactDigest"`
	Receipts       int    `json:"receipts"`
	Runs           int    `json:"runs"`
	// Manifest is the audit manifest's digest.
	Manifest string `json:"manifest"`
}

// Export writes the bundle of the deployment's chain on the host to w.
func Export(ctx context.Context, opts ExportOptions, w io.Writer) (*Summary, error) {
	h, err := host.Open(ctx, opts.Home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	deployment, err := pickDeployment(ctx, h, opts.Deployment)
	if err != nil {
		return nil, err
	}
	b, err := bind.Current(ctx, h, deployment)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "oa-audit-export-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	layout, err := orasoci.NewWithContext(ctx, dir)
	if err != nil {
		return nil, err
	}
	step := opts.Progress
	if step == nil {
		step = func(string, ...any) {}
	}
	step("copying the bound release %s", b.ArtifactDigest)
	art, err := copyRelease(ctx, h, b, opts.Registry, layout)
	if err != nil {
		return nil, err
	}
	streamed, err := os.MkdirTemp("", "oa-audit-docs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(streamed)
	step("reading deployment %s's record: runs, receipts, decisions", deployment)
	docs, err := collect(ctx, h, b, art, opts.Now, streamed)
	if err != nil {
		return nil, err
	}
	step("read %d runs and %d receipts; packing the bundle", docs.runs, docs.receipts)
	manifest, err := packAudit(ctx, layout, art.Descriptor, docs, opts.Now)
	if err != nil {
		return nil, err
	}
	step("writing the bundle")
	if err := writeTar(w, dir, opts.Now); err != nil {
		return nil, err
	}
	return &Summary{Deployment: deployment, ArtifactDigest: b.ArtifactDigest, Receipts: docs.receipts, Runs: docs.runs, Manifest: manifest.Digest.String()}, nil
}

// pickDeployment is the deployment named, or the host's only bound one.
func pickDeployment(ctx context.Context, h *host.Host, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	vs, err := h.Versions().LatestOfKind(ctx, store.KindBinding)
	if err != nil {
		return "", err
	}
	if len(vs) != 1 {
		return "", blocking.New(blocking.BindingMissing, "the host has %d bound deployments: name one with --deployment", len(vs))
	}
	return vs[0].Key, nil
}

// copyRelease copies the bound release with its signature and attestation
// manifests into the bundle's layout, verifying it is the bound one.
func copyRelease(ctx context.Context, h *host.Host, b *bind.Binding, transport oci.OpenOptions, dst oras.Target) (*oci.Artifact, error) {
	rel, err := bind.OpenRelease(ctx, h, b, transport)
	if err != nil {
		return nil, err
	}
	if _, err := oci.Copy(ctx, rel.Target, dst, rel.Artifact.Descriptor, ReleaseTag); err != nil {
		return nil, err
	}
	return rel.Artifact, nil
}

// collected holds the documents by name: the small ones in memory, the
// two that grow with history (runs, receipts) in files.
type collected struct {
	bytes          map[string][]byte
	files          map[string]*arrayFile
	receipts, runs int
}

// collect reads every document of the bundle from the host; the runs and
// receipts are streamed to files under dir, a row at a time.
func collect(ctx context.Context, h *host.Host, b *bind.Binding, art *oci.Artifact, now time.Time, dir string) (*collected, error) {
	c := &collected{bytes: map[string][]byte{}, files: map[string]*arrayFile{}}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(h.Home, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	hostPub, err := read(host.HostPubFile)
	if err != nil {
		return nil, err
	}
	receiptPub, err := read(ledger.ReceiptPubFile)
	if err != nil {
		return nil, err
	}
	for name, file := range map[string]string{DocPolicy: host.PolicyFile, DocRegistry: resolve.RegistryFile} {
		if c.bytes[name], err = read(file); err != nil {
			return nil, err
		}
	}
	cp, err := read(ledger.CheckpointFile)
	if err != nil {
		return nil, err
	}
	if cp == nil {
		cp = []byte("null")
	}
	c.bytes[DocCheckpointFile] = cp
	logPub, err := read(translog.PublicKeyFile)
	if err != nil {
		return nil, err
	}
	l := ledger.Open(h)
	logHead, _, err := l.LogCosigned(ctx)
	if err == nil && logHead == nil {
		logHead, err = l.LogHead(ctx)
	}
	if err != nil {
		return nil, err
	}
	if logHead != nil {
		c.bytes[DocLogCheckpoint] = logHead.Note
	}
	if w := h.Policy.Witnessing; w != nil && w.PolicyFile != "" {
		c.bytes[DocWitnessPolicy] = []byte(w.Policy)
	}
	if roots, err := trustedRoots(h); err != nil || roots != nil {
		if err != nil {
			return nil, err
		}
		if c.bytes[DocTrustedRoots], err = canonical.Marshal(roots); err != nil {
			return nil, err
		}
	}
	var dump *Dump
	for name := range streamedDocs {
		if c.files[name], err = newArrayFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		defer c.files[name].f.Close()
	}
	err = streamDump(ctx, h, func(d *Dump) error { dump = d; return nil },
		func(v *store.Version) error { return c.files[DocCheckpoints].add(v) },
		func(r *ledger.RunRow) error { return c.files[DocRuns].add(r) },
		func(r *ledger.ReceiptRow) error { return c.files[DocReceipts].add(r) })
	if err != nil {
		return nil, err
	}
	for name := range streamedDocs {
		if err := c.files[name].finish(); err != nil {
			return nil, err
		}
	}
	c.runs, c.receipts = c.files[DocRuns].n, c.files[DocReceipts].n
	proj, err := projection.Project(art.Worker, art.Descriptor.Digest.String(), art.IRDigest)
	if err != nil {
		return nil, err
	}
	teach, err := attentionRecords(h).TeachRequestsOf(ctx, b.Deployment)
	if err != nil {
		return nil, err
	}
	decisions, err := attentionRecords(h).SignedDecisionsOf(ctx, b.Deployment)
	if err != nil {
		return nil, err
	}
	byKind := splitVersions(dump.Versions)
	values := map[string]any{
		DocHost: HostDoc{Type: HostType, Host: h.Policy.Host, Deployment: b.Deployment, ArtifactDigest: b.ArtifactDigest,
			HostPublicKey: string(hostPub), ReceiptPublicKey: string(receiptPub), LogPublicKey: strings.TrimSpace(string(logPub)), ExportedAt: now.UTC().Truncate(time.Millisecond)},
		DocAdmissions: dump.Admissions, DocRevocations: dump.Revocations,
		DocRegistrySignatures: byKind[store.KindRegistry], DocConnections: byKind[store.KindConnection],
		DocBindings: byKind[store.KindBinding], DocOtherRecords: byKind[""],
		DocProjection: proj.Manifest(), DocPlan: b.Plan, DocTeachRequests: teach,
	}
	if len(decisions) > 0 {
		values[DocDecisions] = decisions
	}
	for name, v := range values {
		if c.bytes[name], err = canonical.Marshal(v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return c, nil
}

// trustedRoots reads the trusted roots the host's policy names, each held
// to the digest the policy recorded when it was loaded (a root changed
// since is refused: it would no longer be the policy the records name);
// nil when the policy trusts no identity.
func trustedRoots(h *host.Host) ([]TrustedRootDoc, error) {
	var out []TrustedRootDoc
	digests := map[string]string{}
	for _, g := range []map[string]host.TrustedKey{h.Policy.Publishers, h.Policy.Authorities} {
		for _, k := range g {
			if k.Identity != nil {
				digests[k.TrustedRoot] = k.TrustedRootDigest
			}
		}
	}
	for _, name := range h.Policy.TrustedRootNames() {
		raw, err := os.ReadFile(host.TrustedRootPath(h.Home, name))
		if err != nil || len(raw) > signing.MaxTrustedRootBytes || digest.FromBytes(raw).String() != digests[name] {
			return nil, blocking.New(blocking.TrustedRootInvalid, "a trusted root of the policy changed or cannot be read since the host opened it")
		}
		out = append(out, TrustedRootDoc{Name: name, Digest: digests[name], Bytes: raw})
	}
	return out, nil
}

// documentKinds are the version kinds with a document of their own; the
// others go to DocOtherRecords (key "").
var documentKinds = map[string]bool{store.KindRegistry: true, store.KindConnection: true, store.KindBinding: true, store.KindCheckpoint: true}

func splitVersions(vs []store.Version) map[string][]store.Version {
	out := map[string][]store.Version{"": {}}
	for k := range documentKinds {
		out[k] = []store.Version{}
	}
	for _, v := range vs {
		k := v.Kind
		if !documentKinds[k] {
			k = ""
		}
		out[k] = append(out[k], v)
	}
	return out
}

// packAudit pushes the documents as layers of the audit manifest, whose
// subject is the worker artifact, and tags it.
func packAudit(ctx context.Context, layout *orasoci.Store, subject ocispec.Descriptor, docs *collected, now time.Time) (ocispec.Descriptor, error) {
	layers := make([]ocispec.Descriptor, 0, len(documents))
	for _, d := range documents {
		if optionalDocs[d.name] && docs.bytes[d.name] == nil {
			continue
		}
		desc, body, err := docs.open(d.name, d.mediaType)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: d.name}
		// Equal documents (two empty lists) are one blob.
		err = layout.Push(ctx, desc, body)
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return ocispec.Descriptor{}, err
		}
		layers = append(layers, desc)
	}
	desc, err := oras.PackManifest(ctx, layout, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Subject: &subject, Layers: layers,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: now.UTC().Format(time.RFC3339)},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return desc, layout.Tag(ctx, desc, AuditTag)
}

// writeTar writes the layout folder as a tar, files in name order with
// fixed times and modes, so one layout gives one byte stream.
func writeTar(w io.Writer, dir string, now time.Time) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	tw := tar.NewWriter(w)
	for _, name := range files {
		if err := writeTarFile(tw, filepath.Join(dir, filepath.FromSlash(name)), name, now); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeTarFile copies one file into the tar, streamed: a document of a
// long history is never held whole.
func writeTarFile(tw *tar.Writer, path, name string, now time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: st.Size(), ModTime: now.UTC().Truncate(time.Second), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("audit: %s changed while it was written", name)
	}
	return err
}

// open returns the descriptor and the bytes of document name: from
// memory, or from its file.
func (c *collected) open(name, mediaType string) (ocispec.Descriptor, io.Reader, error) {
	if af := c.files[name]; af != nil {
		f, err := os.Open(af.f.Name())
		if err != nil {
			return ocispec.Descriptor{}, nil, err
		}
		return ocispec.Descriptor{MediaType: mediaType, Digest: af.digest, Size: af.size}, f, nil
	}
	data := c.bytes[name]
	if data == nil {
		data = []byte{}
	}
	return content.NewDescriptorFromBytes(mediaType, data), bytes.NewReader(data), nil
}

// arrayFile writes a canonical JSON array one element at a time to a
// file, digesting it as it goes: "[" + the canonical JSON of each element
// joined by "," + "]" is the canonical JSON of the whole list (RFC 8785
// has no whitespace), so the document is byte for byte what
// canonical.Marshal of the list would give, without the list.
type arrayFile struct {
	f      *os.File
	buf    *bufio.Writer
	digest digest.Digest
	sha    digest.Digester
	size   int64
	n      int
}

func newArrayFile(path string) (*arrayFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	a := &arrayFile{f: f, sha: digest.SHA256.Digester()}
	a.buf = bufio.NewWriterSize(io.MultiWriter(f, a.sha.Hash()), 64<<10)
	return a, a.write([]byte("["))
}

func (a *arrayFile) write(p []byte) error {
	n, err := a.buf.Write(p)
	a.size += int64(n)
	return err
}

// add appends v's canonical JSON.
func (a *arrayFile) add(v any) error {
	b, err := canonical.Marshal(v)
	if err != nil {
		return err
	}
	if a.n > 0 {
		if err := a.write([]byte(",")); err != nil {
			return err
		}
	}
	a.n++
	return a.write(b)
}

// finish closes the list and the file's writes.
func (a *arrayFile) finish() error {
	if err := a.write([]byte("]")); err != nil {
		return err
	}
	if err := a.buf.Flush(); err != nil {
		return err
	}
	a.digest = a.sha.Digest()
	return a.f.Sync()
}
