package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/coordinator/attention"
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

// Links of an audit, in chain order (the artifact's four are oci's).
const (
	LinkBundle      = "bundle"
	LinkAdmission   = "admission"
	LinkRegistry    = "registry"
	LinkConnections = "connections"
	LinkProjection  = "projection"
	LinkPlan        = "plan"
	LinkBinding     = "binding"
	LinkReceipts    = "receipts"
	LinkTeach       = "teach"
	LinkDecisions   = "decisions"
	LinkLog         = "log"
)

// Keys are the public keys (cosign PEM) the auditor trusts. A publisher
// or authority the auditor trusts by certificate identity is given as
// PublisherIdentity or AuthorityIdentity (signing.NewIdentityVerifier
// with the auditor's own trusted root) instead of its PEM.
type Keys struct {
	Publisher, Authority, Host []byte
	PublisherIdentity          *signing.Verifier
	AuthorityIdentity          *signing.Verifier
}

// Link is one checked link of the chain; Refusal is nil when it holds.
type Link struct {
	Name    string          `json:"link"`
	Detail  string          `json:"detail,omitempty"`
	Refusal *blocking.Error `json:"refusal,omitempty"`
	// Signer is the identity the certificate of the signature or
	// attestation named, when it was trusted by identity.
	Signer *signing.CertIdentity `json:"signer,omitempty"`
}

// Report is the audit of one bundle.
type Report struct {
	Host           string `json:"host,omitempty"`
	Deployment     string `json:"deployment,omitempty"`
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	Links          []Link `json:"links"`
	// FirstBroken is the name of the first link that does not hold.
	FirstBroken string              `json:"firstBroken,omitempty"`
	OK          bool                `json:"ok"`
	Receipts    *ledger.ChainReport `json:"receipts,omitempty"`
	// Log is the host's log checkpoint the bundle carries, when it
	// carries one: its size, and which of the policy's witnesses
	// cosigned it.
	Log *LogReport `json:"log,omitempty"`
}

// LogReport is what the log link found: the checkpoint's size and root
// (held to the bundle's receipts), the witnesses of the bundle's policy
// whose cosignatures of it verify, and the policy's quorum.
type LogReport struct {
	Origin    string   `json:"origin"`
	Size      int64    `json:"size"`
	Root      string   `json:"root"`
	Cosigners []string `json:"cosigners"`
	Witnesses int      `json:"witnesses"`
	Quorum    int      `json:"quorum"`
}

// Err is the first broken link's refusal, nil when every link holds.
func (r *Report) Err() error {
	for _, l := range r.Links {
		if l.Refusal != nil {
			return l.Refusal
		}
	}
	return nil
}

func (r *Report) add(name, detail string, err error) {
	l := Link{Name: name, Detail: detail}
	if err != nil {
		l.Refusal = firstRefusal(err)
	}
	r.Links = append(r.Links, l)
}

// firstRefusal is err's first refusal; a fault reads as the bundle's.
func firstRefusal(err error) *blocking.Error {
	if l := blocking.Refusals(err); len(l) > 0 {
		return l[0]
	}
	return blocking.New(blocking.AuditBundleInvalid, "a record cannot be read")
}

// bundle is a bundle opened: its layout and its documents.
type bundle struct {
	// release is the audit manifest's subject in the bundle's layout,
	// read as a host reads it (the oci defaults): the one release the
	// chain's and the plan's checks read.
	release oci.Release
	docs    map[string][]byte
	host    HostDoc
	dump    Dump
	// docTarget reads the document layers; streamed holds the layers of
	// the documents that grow with history (streamedDocs), read a row at
	// a time as the host is rebuilt, never whole.
	docTarget oci.Target
	streamed  map[string]ocispec.Descriptor
	// roots are the trusted roots of the host's policy, by its
	// trusted_root string (DocTrustedRoots).
	roots map[string][]byte
}

// streamedDocs are the documents read a row at a time.
var streamedDocs = map[string]bool{DocCheckpoints: true, DocRuns: true, DocReceipts: true}

// Verify checks the bundle at path offline with keys: every digest
// recomputed, every signature checked with the keys given (never with a
// key the bundle carries), every link reported in chain order. The error
// is for program faults and bad keys only; a broken link is in the
// report (see Report.Err).
func Verify(ctx context.Context, path string, keys Keys) (*Report, error) {
	return VerifyWithLimits(ctx, path, keys, DefaultLimits())
}

// VerifyWithLimits is Verify holding the bundle to lim (zero fields take
// their defaults): a bundle over a limit is refused audit_bundle_too_large
// at the bundle link, before the bytes over it are read.
func VerifyWithLimits(ctx context.Context, path string, keys Keys, lim Limits) (*Report, error) {
	trusted, err := loadKeys(keys)
	if err != nil {
		return nil, err
	}
	pub, auth, hostKey := trusted.publisher, trusted.authority, trusted.host
	r := &Report{}
	scratch, err := os.MkdirTemp("", "oa-audit-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	b, err := openBundle(ctx, path, scratch, lim)
	if err != nil {
		if blocking.Refusals(err) == nil {
			return nil, err
		}
		r.add(LinkBundle, path, err)
		return r.finish(), nil
	}
	// The host is rebuilt first: its runs and receipts are read from the
	// bundle only as they go into its store, so a document that turns out
	// malformed there is the bundle's refusal.
	home, err := os.MkdirTemp("", "oa-audit-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	h, rebuildErr := rebuildHost(ctx, home, b, hostKey)
	if h != nil {
		defer h.Close()
	}
	var streamErr *documentError
	if errors.As(rebuildErr, &streamErr) {
		r.add(LinkBundle, path, streamErr.err)
		return r.finish(), nil
	}
	// The host name is host.json's word until a host-signed record
	// confirms it (hostChecks): never printed unverified.
	r.Deployment, r.ArtifactDigest = b.host.Deployment, b.release.Descriptor.Digest.String()
	r.add(LinkBundle, fmt.Sprintf("%d documents, release %s", len(b.docs)+len(b.streamed), b.release.Descriptor.Digest), nil)
	chain := signing.VerifyChain(ctx, &b.release, pub, auth)
	if err := chain.Err(); err != nil && blocking.Refusals(err) == nil {
		return nil, err
	}
	for _, l := range chain.Links {
		r.Links = append(r.Links, Link{Name: l.Name, Detail: l.Digest, Refusal: l.Refusal, Signer: l.Signer})
	}
	if rebuildErr != nil {
		if blocking.Refusals(rebuildErr) == nil {
			return nil, rebuildErr
		}
		r.add(LinkAdmission, "the host's policy and records", rebuildErr)
		return r.finish(), nil
	}
	hostChecks(ctx, r, h, b, chain.Artifact, pub, auth)
	return r.finish(), nil
}

func (r *Report) finish() *Report {
	r.OK = true
	for _, l := range r.Links {
		if l.Refusal != nil {
			r.OK, r.FirstBroken = false, l.Name
			break
		}
	}
	return r
}

// trustedKeys are the three keys an audit trusts, parsed.
type trustedKeys struct {
	publisher, authority, host *signing.Verifier
}

// loadKeys parses the three trusted keys; an identity given stands for
// the publisher's or authority's key.
func loadKeys(k Keys) (trustedKeys, error) {
	t := trustedKeys{publisher: k.PublisherIdentity, authority: k.AuthorityIdentity}
	var err error
	if t.publisher == nil {
		if t.publisher, err = signing.LoadVerifier(k.Publisher); err != nil {
			return trustedKeys{}, err
		}
	}
	if t.authority == nil {
		if t.authority, err = signing.LoadVerifier(k.Authority); err != nil {
			return trustedKeys{}, err
		}
	}
	if t.host, err = signing.LoadVerifier(k.Host); err != nil {
		return trustedKeys{}, err
	}
	return t, nil
}

// openBundle unpacks the tar at path into the empty folder dir, bounded
// by lim (unpackBundle), opens it as an OCI layout that reads only what it
// is asked for, and reads the audit manifest and its documents, each
// checked against its limit before it is read and verified against its
// descriptor's size and digest as it is.
func openBundle(ctx context.Context, path, dir string, lim Limits) (*bundle, error) {
	lim = lim.WithDefaults()
	if err := unpackBundle(path, dir, lim); err != nil {
		return nil, err
	}
	// The release is read as a host reads it (the oci defaults); the
	// documents through a view of the same folder whose layers may be as
	// large as lim.DocumentBytes.
	layout, err := openLayout(ctx, dir, oci.Limits{ManifestBytes: lim.ManifestBytes})
	if err != nil {
		return nil, err
	}
	docs, err := openLayout(ctx, dir, oci.Limits{ManifestBytes: lim.ManifestBytes, SignatureBytes: lim.DocumentBytes, ComponentBytes: lim.DocumentBytes})
	if err != nil {
		return nil, err
	}
	desc, err := layout.Resolve(ctx, AuditTag)
	if err != nil || desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, invalidf("the layout has no audit manifest tagged %q", AuditTag)
	}
	if desc.Size > lim.ManifestBytes {
		return nil, tooLarge("the audit manifest", desc.Size, lim.ManifestBytes, FlagMaxManifestBytes)
	}
	raw, err := oci.FetchBlob(ctx, layout, desc)
	if err != nil {
		return nil, invalidf("the audit manifest does not match its digest and size")
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.ArtifactType != ArtifactType || m.Subject == nil {
		return nil, invalidf("the audit manifest is not an %s manifest with a subject", ArtifactType)
	}
	b := &bundle{release: oci.Release{Target: layout, Descriptor: *m.Subject}, docs: map[string][]byte{}, docTarget: docs, streamed: map[string]ocispec.Descriptor{}}
	if release, err := layout.Resolve(ctx, ReleaseTag); err != nil || release.Digest != b.release.Descriptor.Digest {
		return nil, invalidf("the release tagged %q is not the audit manifest's subject", ReleaseTag)
	}
	if err := b.readDocuments(ctx, docs, m.Layers, lim); err != nil {
		return nil, err
	}
	return b, b.decode()
}

// openLayout opens the unpacked layout at dir with lim.
func openLayout(ctx context.Context, dir string, lim oci.Limits) (oci.Target, error) {
	t, err := oci.Open(ctx, oci.Ref{Layout: dir}, oci.OpenOptions{Limits: lim})
	if err != nil {
		// index.json's size was held to the limit as the tar was read.
		if l := blocking.Refusals(err); l != nil {
			return nil, invalidf("the tar does not hold a valid OCI image layout (%s)", l[0].Code)
		}
		return nil, err
	}
	return t, nil
}

// readDocuments reads the audit manifest's layers, each a known document
// named once, refused over lim.DocumentBytes before a byte is read.
func (b *bundle) readDocuments(ctx context.Context, docs oci.Target, layers []ocispec.Descriptor, lim Limits) error {
	want := map[string]string{}
	for _, d := range documents {
		want[d.name] = d.mediaType
	}
	for _, l := range layers {
		name := l.Annotations[ocispec.AnnotationTitle]
		_, seen := b.streamed[name]
		if want[name] != l.MediaType || b.docs[name] != nil || seen {
			return invalidf("layer %s is not a bundle document, or is repeated", l.Digest)
		}
		if l.Size > lim.DocumentBytes {
			return tooLarge("document "+name, l.Size, lim.DocumentBytes, FlagMaxDocumentBytes)
		}
		if streamedDocs[name] {
			if l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256 {
				return invalidf("document %s is missing or does not match its digest and size", name)
			}
			b.streamed[name] = l
			continue
		}
		data, err := oci.FetchBlob(ctx, docs, l)
		if err != nil {
			if blocking.Refusals(err) == nil && !errors.Is(err, errdef.ErrNotFound) {
				return err
			}
			return invalidf("document %s is missing or does not match its digest and size", name)
		}
		b.docs[name] = data
	}
	for _, d := range documents {
		if _, ok := b.streamed[d.name]; b.docs[d.name] == nil && !ok && !optionalDocs[d.name] {
			return invalidf("document %s is missing", d.name)
		}
	}
	return nil
}

// decode reads the JSON documents strictly.
func (b *bundle) decode() error {
	var regs, conns, binds, other []store.Version
	targets := map[string]any{DocHost: &b.host, DocAdmissions: &b.dump.Admissions, DocRevocations: &b.dump.Revocations,
		DocRegistrySignatures: &regs, DocConnections: &conns, DocBindings: &binds, DocOtherRecords: &other}
	for name, v := range targets {
		if err := canonical.DecodeStrict(b.docs[name], v); err != nil {
			return blocking.New(blocking.AuditBundleInvalid, "document %s is not its canonical JSON", name)
		}
	}
	if b.host.Type != HostType || b.host.ArtifactDigest != b.release.Descriptor.Digest.String() {
		return blocking.New(blocking.AuditBundleInvalid, "document %s does not name the bundle's release", DocHost)
	}
	for kind, vs := range map[string][]store.Version{store.KindRegistry: regs, store.KindConnection: conns, store.KindBinding: binds} {
		for _, v := range vs {
			if v.Kind != kind {
				return blocking.New(blocking.AuditBundleInvalid, "a %s record is filed among the %s records", v.Kind, kind)
			}
		}
	}
	b.dump.Versions = slices.Concat(regs, conns, binds, other)
	return b.decodeRoots()
}

// decodeRoots reads the trusted roots document, when there is one: each
// root named once and matching its digest.
func (b *bundle) decodeRoots() error {
	b.roots = map[string][]byte{}
	raw := b.docs[DocTrustedRoots]
	if raw == nil {
		return nil
	}
	var roots []TrustedRootDoc
	if err := canonical.DecodeStrict(raw, &roots); err != nil {
		return blocking.New(blocking.AuditBundleInvalid, "document %s is not its canonical JSON", DocTrustedRoots)
	}
	for _, r := range roots {
		if _, dup := b.roots[r.Name]; dup || digest.FromBytes(r.Bytes).String() != r.Digest {
			return blocking.New(blocking.AuditBundleInvalid, "document %s repeats a root or holds one that does not match its digest", DocTrustedRoots)
		}
		b.roots[r.Name] = r.Bytes
	}
	return nil
}

// checkpoints is the RowSource of the checkpoints document.
func (b *bundle) checkpoints(ctx context.Context) store.RowSource[store.Version] {
	return func(add func(*store.Version) error) error {
		return streamArray(ctx, b.docTarget, DocCheckpoints, b.streamed[DocCheckpoints], func(v *store.Version) error {
			if v.Kind != store.KindCheckpoint {
				return &documentError{blocking.New(blocking.AuditBundleInvalid, "a %s record is filed among the %s records", v.Kind, store.KindCheckpoint)}
			}
			return add(v)
		})
	}
}

// runs is the RowSource of the runs document.
func (b *bundle) runs(ctx context.Context) store.RowSource[ledger.RunRow] {
	return func(add func(*ledger.RunRow) error) error {
		return streamArray(ctx, b.docTarget, DocRuns, b.streamed[DocRuns], add)
	}
}

// receipts is the RowSource of the receipts document, each receipt at its
// place in the chain.
func (b *bundle) receipts(ctx context.Context) store.RowSource[ledger.ReceiptRow] {
	return func(add func(*ledger.ReceiptRow) error) error {
		place := int64(0)
		return streamArray(ctx, b.docTarget, DocReceipts, b.streamed[DocReceipts], func(rc *ledger.ReceiptRow) error {
			place++
			if rc.Seq != place {
				return &documentError{blocking.New(blocking.ReceiptChainBroken, "document %s lists receipt #%d at place %d", DocReceipts, rc.Seq, place)}
			}
			return add(rc)
		})
	}
}

// documentError is a refusal of a streamed document, met while the host
// is rebuilt from it: the bundle link's.
type documentError struct{ err error }

func (e *documentError) Error() string { return e.err.Error() }
func (e *documentError) Unwrap() error { return e.err }

// streamArray reads the document of layer desc, a JSON array, one
// element at a time: each element decoded strictly and handed to add.
// The document is believed only whole: the canonical bytes rebuilt from
// the elements ("[" + elements joined by "," + "]") must have the layer's
// digest and size, else the document is refused (rows already added go
// with the rebuilt host, which a refusal discards).
func streamArray[T any](ctx context.Context, docs oci.Target, name string, desc ocispec.Descriptor, add func(*T) error) error {
	refused := func() error {
		return &documentError{blocking.New(blocking.AuditBundleInvalid, "document %s is missing, is not its canonical JSON, or does not match its digest and size", name)}
	}
	rc, err := docs.Fetch(ctx, desc)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return refused()
		}
		return err
	}
	defer rc.Close()
	sum := digest.SHA256.Digester()
	size := int64(0)
	write := func(p []byte) {
		sum.Hash().Write(p)
		size += int64(len(p))
	}
	dec := json.NewDecoder(io.LimitReader(rc, desc.Size+1))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return refused()
	}
	write([]byte("["))
	for n := 0; dec.More(); n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return refused()
		}
		if n > 0 {
			write([]byte(","))
		}
		write(raw)
		var row T
		if canonical.DecodeStrict(raw, &row) != nil {
			return refused()
		}
		if err := add(&row); err != nil {
			return err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return refused()
	}
	write([]byte("]"))
	if _, err := dec.Token(); err != io.EOF || size != desc.Size || sum.Digest() != desc.Digest {
		return refused()
	}
	return nil
}

// rebuildHost makes a host folder at home from the bundle, with the
// auditor's host key as its key: the policy and registry files, the
// receipt key the checkpoint must pin, and a store holding the bundle's
// rows.
func rebuildHost(ctx context.Context, home string, b *bundle, hostKey *signing.Verifier) (*host.Host, error) {
	hostPEM, err := hostKey.PublicPEM()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{host.HostPubFile: hostPEM, host.PolicyFile: b.docs[DocPolicy], resolve.RegistryFile: b.docs[DocRegistry],
		ledger.ReceiptPubFile: []byte(b.host.ReceiptPublicKey)}
	for name, data := range files {
		p := filepath.Join(home, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, err
		}
	}
	db, err := store.Open(ctx, filepath.Join(home, host.StateFile))
	if err != nil {
		return nil, err
	}
	err = restoreStream(ctx, db, &b.dump, b.checkpoints(ctx), b.runs(ctx), b.receipts(ctx))
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	var docErr *documentError
	if errors.As(err, &docErr) {
		return nil, err
	}
	if err != nil {
		return nil, blocking.New(blocking.AuditBundleInvalid, "the bundle's records do not fit one store (a key is repeated)")
	}
	// The policy's trusted roots are the bundle's, never files a bundle's
	// policy could name on the auditor's machine.
	// So is the witnessing policy_file's text.
	return host.OpenWith(ctx, home, host.OpenOptions{TrustedRoots: b.roots, WitnessPolicy: b.docs[DocWitnessPolicy]})
}

// hostChecks checks the links after the artifact's on the rebuilt host.
func hostChecks(ctx context.Context, r *Report, h *host.Host, b *bundle, art *oci.Artifact, pub, auth *signing.Verifier) {
	binding, bindErr := bind.Current(ctx, h, b.host.Deployment)
	// The chain is judged at the time a person bound it: the admission
	// had to be active then (a later expiry does not break history).
	at := time.Time{}
	if binding != nil {
		at = binding.ApprovedAt
	}
	status, err := admit.StatusOf(ctx, h, b.release.Descriptor.Digest.String(), at)
	if err != nil {
		r.add(LinkAdmission, "", err)
		return
	}
	r.add(LinkAdmission, admissionDetail(status), admissionErr(status, pub, auth))
	r.add(registryLink(ctx, h))
	r.add(connectionsLink(ctx, h))
	r.add(projectionLink(b, art, binding))
	r.add(planLink(ctx, h, b, binding, bindErr, at))
	bindDetail := ""
	if binding != nil {
		bindDetail = fmt.Sprintf("%s #%d, approved by %s", binding.Deployment, binding.Seq, binding.ApprovedBy)
	}
	if bindErr == nil && binding != nil {
		bindErr = checkHostName(h, b, binding)
	}
	if bindErr == nil && binding != nil {
		r.Host = binding.Host
	}
	r.add(LinkBinding, bindDetail, bindErr)
	r.add(receiptsLink(ctx, r, h, b))
	if b.docs[DocLogCheckpoint] != nil {
		r.add(logLink(ctx, r, h, b))
	}
	r.add(teachLink(ctx, h, b))
	r.add(decisionsLink(ctx, h, b, binding))
}

// decisionsLink verifies every signed decision in the bundle with the
// bundle's policy (whose digest the host-signed admission names): each is
// signed by the key the policy names for its person (or the host-held key
// of the client installation the policy names for them), the person has
// the right, and it names this host, deployment and a run in the records.
// Its detail names who decided, by key.
func decisionsLink(ctx context.Context, h *host.Host, b *bundle, binding *bind.Binding) (string, string, error) {
	var ds []host.SignedDecision
	if doc := b.docs[DocDecisions]; doc != nil {
		if err := canonical.DecodeStrict(doc, &ds); err != nil {
			return LinkDecisions, "", blocking.New(blocking.AuditBundleInvalid, "document %s is not its canonical JSON", DocDecisions)
		}
	}
	if len(ds) == 0 {
		return LinkDecisions, "no signed decisions", nil
	}
	if binding == nil {
		return LinkDecisions, "", blocking.New(blocking.DecisionRecordInvalid, "the decisions cannot be checked without a verified binding")
	}
	names := make([]string, 0, len(ds))
	for i := range ds {
		s := ds[i].Statement
		bad := func(why string) error {
			return blocking.New(blocking.DecisionRecordInvalid, "decision %d (%s on %s): %s", i+1, s.Decision, s.AttentionID, why)
		}
		if s.Host != h.Policy.Host || s.Deployment != b.host.Deployment {
			return LinkDecisions, "", bad("it names another host or deployment")
		}
		if _, err := h.Policy.VerifyDecision(&ds[i], binding.Plan.Package); err != nil {
			return LinkDecisions, "", bad(blocking.Refusals(err)[0].Detail)
		}
		row, err := ledger.Open(h).Tables().RunByID(ctx, s.RunID)
		if err != nil {
			return LinkDecisions, "", err
		}
		if row == nil || row.Deployment != s.Deployment {
			return LinkDecisions, "", bad("it names no run of its deployment in the records")
		}
		names = append(names, s.Decision+" "+s.AttentionID+" by "+ds[i].Describe(h.Policy))
	}
	return LinkDecisions, fmt.Sprintf("%d signed decisions, every signature verified: %s", len(ds), strings.Join(names, "; ")), nil
}

// teachLink verifies the bundle's teach requests: each signed by a
// receipt key the host pinned, of this host and a run in its records.
func teachLink(ctx context.Context, h *host.Host, b *bundle) (string, string, error) {
	var reqs []attention.SignedTeachRequest
	if doc := b.docs[DocTeachRequests]; doc != nil {
		if err := canonical.DecodeStrict(doc, &reqs); err != nil {
			return LinkTeach, "", blocking.New(blocking.AuditBundleInvalid, "document %s is not its canonical JSON", DocTeachRequests)
		}
	}
	for _, t := range reqs {
		if t.Request.Deployment != b.host.Deployment {
			return LinkTeach, "", blocking.New(blocking.TeachRequestInvalid, "a teach request of another deployment is in the bundle")
		}
	}
	detail := fmt.Sprintf("%d teach requests", len(reqs))
	keys, err := ledger.Open(h).ReceiptKeyPins(ctx)
	if err != nil {
		return LinkTeach, detail, err
	}
	return LinkTeach, detail, attentionRecords(h).CheckTeachRequests(ctx, reqs, keys.Key)
}

// attentionRecords are host h's attention records, read through the
// ledger's store without the engine.
func attentionRecords(h *host.Host) attention.Records {
	return attention.Records{Rows: ledger.Open(h).Tables(), Home: h.Home, Host: h.Policy.Host}
}

// checkHostName holds the host name host.json gives to the host-signed
// binding (verified with the auditor's host key) and to the bundle's
// policy: host.json is data until they agree.
func checkHostName(h *host.Host, b *bundle, binding *bind.Binding) error {
	if b.host.Host != binding.Host || h.Policy.Host != binding.Host {
		return blocking.New(blocking.AuditHostUnverified, "%s names another host than the binding the host signed", DocHost)
	}
	return nil
}

func admissionDetail(st *admit.Status) string {
	if st.Record == nil {
		return string(st.State)
	}
	detail := fmt.Sprintf("%s, %s@%s #%d admitted by %s%s", st.State, st.Record.Package, st.Record.Version, st.Record.Seq, st.Record.AdmittedBy, admissionSigners(st))
	if r := st.Record.Rollback; r != nil {
		detail += fmt.Sprintf(", a rollback from #%d: %s", r.FromSeq, r.Reason)
	}
	return detail
}

// admissionErr refuses an admission not active when bound, or made with
// other publisher or authority keys than the auditor's; for a signer the
// auditor trusts by identity, made with a signer whose certificate named
// another identity (audit_identity_mismatch).
func admissionErr(st *admit.Status, pub, auth *signing.Verifier) error {
	if st.State != admit.Active {
		return st.Why
	}
	if !sameSigner(st.Record.Publisher, pub) {
		if pub.Identity() != nil {
			return blocking.New(blocking.AuditIdentityMismatch, "the admission names a publisher whose certificate is not the identity given")
		}
		return blocking.New(blocking.AuditKeyMismatch, "the admission names another publisher key than --publisher-key")
	}
	if !slices.ContainsFunc(st.Record.Authorities, func(k admit.KeyRef) bool { return sameSigner(k, auth) }) {
		if auth.Identity() != nil {
			return blocking.New(blocking.AuditIdentityMismatch, "the admission names no attestation by the authority identity given")
		}
		return blocking.New(blocking.AuditKeyMismatch, "the admission names no attestation by --authority-key")
	}
	return nil
}

// sameSigner reports whether the admitted signer k is the one v trusts:
// the same key, or for an identity a certificate identity recorded at
// admission that v's identity matches (the auditor's trusted root may be
// another file than the host's: the signature itself was verified with
// the auditor's).
func sameSigner(k admit.KeyRef, v *signing.Verifier) bool {
	if v.Identity() == nil {
		return k.KeyID == v.KeyID()
	}
	return k.Signer != nil && v.Identity().Matches(*k.Signer)
}

func admissionSigners(st *admit.Status) string {
	if st.Record == nil {
		return ""
	}
	var who []string
	if s := st.Record.Publisher.Signer; s != nil {
		who = append(who, "publisher "+st.Record.Publisher.Name+" as "+s.String())
	}
	for _, a := range st.Record.Authorities {
		if a.Signer != nil {
			who = append(who, "authority "+a.Name+" as "+a.Signer.String())
		}
	}
	if len(who) == 0 {
		return ""
	}
	return "; signed by " + strings.Join(who, ", ")
}

func registryLink(ctx context.Context, h *host.Host) (string, string, error) {
	reg, err := resolve.LoadRegistry(filepath.Join(h.Home, resolve.RegistryFile))
	if err != nil {
		return LinkRegistry, "", err
	}
	if _, err := resolve.CheckRegistrySigned(ctx, h, reg); err != nil {
		return LinkRegistry, reg.Digest(), err
	}
	return LinkRegistry, reg.Digest(), nil
}

func connectionsLink(ctx context.Context, h *host.Host) (string, string, error) {
	list, err := connection.List(ctx, h)
	if err != nil {
		return LinkConnections, "", err
	}
	names := make([]string, 0, len(list))
	for _, c := range list {
		if c.Record == nil {
			return LinkConnections, c.Name, blocking.New(blocking.AuditHostRecordUnverified, "connection %s #%d does not verify with the host key", c.Name, c.Seq)
		}
		names = append(names, fmt.Sprintf("%s r%d", c.Name, c.Record.Revision))
	}
	return LinkConnections, strings.Join(names, ", "), nil
}

// projectionLink projects the verified IR again and holds the bundle's
// projection digests and the binding's persona digest to it.
func projectionLink(b *bundle, art *oci.Artifact, binding *bind.Binding) (string, string, error) {
	if art == nil {
		return LinkProjection, "", blocking.New(blocking.AuditProjectionMismatch, "the release did not verify, so nothing can be projected")
	}
	p, err := projection.Project(art.Worker, art.Descriptor.Digest.String(), art.IRDigest)
	if err != nil {
		return LinkProjection, "", err
	}
	m := p.Manifest()
	got, err := canonical.Marshal(m)
	if err != nil {
		return LinkProjection, "", err
	}
	if string(got) != string(b.docs[DocProjection]) {
		return LinkProjection, m.MaterializationDigest, blocking.New(blocking.AuditProjectionMismatch, "document %s is not the projection of the release", DocProjection)
	}
	if binding != nil && binding.PersonaDigest != m.PersonaDigest {
		return LinkProjection, m.MaterializationDigest, blocking.New(blocking.AuditProjectionMismatch, "the binding approved another persona")
	}
	return LinkProjection, m.MaterializationDigest, nil
}

// planLink resolves the plan again from the rebuilt host and compares it
// with the binding, link by link.
func planLink(ctx context.Context, h *host.Host, b *bundle, binding *bind.Binding, bindErr error, at time.Time) (string, string, error) {
	if binding == nil {
		return LinkPlan, "", bindErr
	}
	var listed resolve.Plan
	if err := canonical.DecodeStrict(b.docs[DocPlan], &listed); err != nil || listed.Digest() != binding.PlanDigest {
		return LinkPlan, binding.PlanDigest, blocking.New(blocking.AuditPlanMismatch, "document %s is not the bound plan", DocPlan)
	}
	st, err := resolve.Load(ctx, h, &b.release, at)
	var plan *resolve.Plan
	if err == nil {
		plan, err = resolve.Resolve(st, resolve.Request{Deployment: binding.Deployment, Model: binding.Model, Type: binding.Plan.Type})
	}
	if err != nil && blocking.Refusals(err) == nil {
		return LinkPlan, "", err
	}
	report := bind.Compare(binding, plan, err)
	if !report.Approved {
		links := make([]string, 0, len(report.Changes))
		for _, c := range report.Changes {
			links = append(links, string(c.Link))
		}
		return LinkPlan, binding.PlanDigest, blocking.New(blocking.AuditPlanMismatch, "changed: %s", strings.Join(links, ", "))
	}
	return LinkPlan, binding.PlanDigest, nil
}

// receiptsLink runs the host's receipt chain check on the bundle's rows:
// the receipt key must be the one the host-signed checkpoint pins; runs
// are held to receipts without MACs (the auditor has no host secret).
func receiptsLink(ctx context.Context, r *Report, h *host.Host, b *bundle) (string, string, error) {
	var receiptKey *signing.Verifier
	if b.host.ReceiptPublicKey != "" {
		receiptKey, _ = signing.LoadVerifier([]byte(b.host.ReceiptPublicKey))
	}
	file := b.docs[DocCheckpointFile]
	if string(file) == "null" {
		file = nil
	}
	chain, err := ledger.Open(h).CheckChain(ctx, ledger.ChainInputs{ReceiptKey: receiptKey, CheckpointFile: file})
	if err != nil {
		return LinkReceipts, "", err
	}
	r.Receipts = chain
	detail := fmt.Sprintf("%d receipts, %d runs", chain.Receipts, chain.Runs)
	if chain.Checkpoint != nil {
		detail += fmt.Sprintf(", head %s = checkpoint #%d", chain.Head, chain.Checkpoint.Seq)
	}
	return LinkReceipts, detail, chain.Err()
}

// logLink checks the host's log checkpoint the bundle carries: signed by
// the log key host.json names (data, like the other keys: the auditor
// compares it with the one the host's operator gave), its root the root
// of the bundle's first receipts (leaf i the digest of receipt i+1), and
// counts the cosignatures of the policy's witnesses (the policy is the
// one the host-signed admission names). Fewer than the quorum is
// reported, not a broken link: the host's witnesses may not have
// answered yet when it exported.
func logLink(ctx context.Context, r *Report, h *host.Host, b *bundle) (string, string, error) {
	key, err := translog.ParseVerifierKey(b.host.LogPublicKey)
	if err != nil {
		return LinkLog, "", err
	}
	policy := translog.Policy{Log: key}
	wit := h.Policy.Witnessing
	if wit != nil {
		policy.Witnesses = wit.Verifiers()
	}
	c, cosigners, err := translog.OpenCheckpoint(b.docs[DocLogCheckpoint], policy)
	if err != nil {
		return LinkLog, "", err
	}
	root, ok, err := ledger.Open(h).ReceiptsRoot(ctx, c.N)
	if err != nil {
		return LinkLog, "", err
	}
	if !ok {
		return LinkLog, "", blocking.New(blocking.LogChainDisagree, "the log checkpoint is of %d leaves; the bundle holds fewer receipts", c.N)
	}
	if root != c.Hash {
		return LinkLog, "", blocking.New(blocking.LogChainDisagree, "the log checkpoint of size %d is not the root of the bundle's first %d receipts", c.N, c.N)
	}
	rep := &LogReport{Origin: c.Origin, Size: c.N, Root: c.Hash.String(), Cosigners: names(wit, cosigners)}
	if rep.Cosigners == nil {
		rep.Cosigners = []string{}
	}
	detail := fmt.Sprintf("%s checkpoint of size %d = the first %d receipts", c.Origin, c.N, c.N)
	if wit != nil {
		rep.Witnesses, rep.Quorum = len(wit.Witnesses), wit.Quorum
		detail += fmt.Sprintf(", cosigned by %d of %d witnesses (quorum %d)", len(rep.Cosigners), rep.Witnesses, rep.Quorum)
		if !wit.Satisfied(rep.Cosigners) {
			detail += ": below the quorum"
		}
	} else {
		detail += ", no witnesses in the policy"
	}
	r.Log = rep
	return LinkLog, detail, nil
}

// names maps the witness key names that cosigned to the policy's names
// for those witnesses.
func names(wit *host.Witnessing, keyNames []string) []string {
	if wit == nil {
		return nil
	}
	var out []string
	for _, n := range wit.Names() {
		for _, k := range keyNames {
			if wit.Witnesses[n].Verifier().Name() == k {
				out = append(out, n)
				break
			}
		}
	}
	return out
}
