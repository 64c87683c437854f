package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/oa-dev/oa/admit"
	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// StatusType is the type of a host status.
const StatusType = "oa.fleet.status/v1"

// State is where provisioning left a host.
type State string

// States of a provisioned host.
const (
	// Bound: the envelope's release is admitted, resolved and bound; the
	// coordinator serves it.
	Bound State = "bound"
	// AwaitingApproval: the plan resolved but waits for a person's
	// `oa bind` (the policy does not let the fleet pre-approve, or the plan
	// reaches past the envelope's ceiling).
	AwaitingApproval State = "awaiting_approval"
	// Refused: the envelope, admission or resolution was refused; the
	// blocking codes say why.
	Refused State = "refused"
	// Revoked: the envelope's release is revoked on this host and is not
	// served.
	Revoked State = "revoked"
)

// Versions are the versions a host runs.
type Versions struct {
	OA       string `json:"oa"`
	Protocol string `json:"protocol"`
}

// Status is a host's signed report to its fleet, pushed under
// status-<host>: what it runs and in which state. It names no connection,
// secret or local path; the plan digest is the host's own.
type Status struct {
	Type        string `json:"type"`
	Fleet       string `json:"fleet"`
	Host        string `json:"host"`
	EnvelopeSeq int64  `json:"envelopeSeq"`
	// RevocationsSeq is the sequence of the fleet revocation list the host
	// applied last; 0 when it has seen none.
	RevocationsSeq int64           `json:"revocationsSeq"`
	Deployment     string          `json:"deployment,omitempty"`
	Release        string          `json:"release,omitempty"`
	State          State           `json:"state"`
	PlanDigest     string          `json:"planDigest,omitempty"`
	Blocking       []blocking.Code `json:"blocking"`
	Versions       Versions        `json:"versions"`
	LastSeen       time.Time       `json:"lastSeen"`
}

// ProvisionOptions are the settings of one provisioning run.
type ProvisionOptions struct {
	Options
	// Now is the time of the run.
	Now time.Time
	// Probe starts each connection of the plan to compare its live tool
	// list with the verified one.
	Probe bool
	// Connector is how connections are started when probing.
	Connector connector.Options
	// Version is the oa version reported in the status.
	Version string
	// StatusRefresh is how long a bound host with nothing changed goes
	// without pushing a new status (zero is DefaultStatusRefresh): until
	// then an unchanged run costs two manifest HEADs and no host-key
	// decryption.
	StatusRefresh time.Duration
}

// DefaultStatusRefresh is ProvisionOptions.StatusRefresh by default: well
// inside `oa fleet status`'s default --stale of 15 minutes.
const DefaultStatusRefresh = 5 * time.Minute

// Result is what one provisioning run did.
type Result struct {
	Status *Status `json:"status"`
	// LocalRef is the release's digest reference in this host's OCI
	// layout, the one `oa bind` takes to complete an awaiting approval:
	// REPO@DIGEST under $OA_HOME/oci, or the layout's path (given with
	// --oci-layout) where REPO's first part reads as a host (oci.LocalRef).
	LocalRef string `json:"localRef,omitempty"`
	// Revoked lists the releases this run revoked on the host.
	Revoked []string `json:"revoked,omitempty"`
	// Copied lists what was fetched from the registry ("artifact", "sig",
	// "att"); empty when the release was already here.
	Copied []string `json:"copied,omitempty"`
	// Admitted, Bound say this run wrote an admission, a binding.
	Admitted bool `json:"admitted"`
	Bound    bool `json:"bound"`
	// Unchanged says nothing changed since the last run that bound the
	// release: the envelope and revocation list are the ones applied, the
	// binding and admission stand, and no status was pushed.
	Unchanged bool `json:"unchanged,omitempty"`
	// Log is what the run published of the host's receipts log under
	// log-<host> (nil when the log is empty): see LogCheckpoint.
	Log *LogPublished `json:"log,omitempty"`
	// NeedsAdmission says the release passed every admission check but was
	// not admitted, as the fleet may not bind it here: a person admits it
	// (oa admit LocalRef) before oa bind. Admitting it leaves the package's
	// release bound now admitted beside it (side by side).
	NeedsAdmission bool `json:"needsAdmission,omitempty"`
}

// kindApplied is the store kind of the envelope a host last applied, per
// fleet: it keeps a host from going back to an older envelope.
const kindApplied = "fleet_envelope"

// appliedType is the type of that record.
const appliedType = "oa.fleet.applied/v1"

type appliedRecord struct {
	fleetRecord
	EnvelopeSeq    int64  `json:"envelopeSeq"`
	EnvelopeDigest string `json:"envelopeDigest"`
}

// fleetRecord is the head of each record a host signs about a fleet it
// follows (the envelope and the revocation list it applied, what it last
// provisioned): the record's type, its sequence in the host store, and
// whose documents it speaks of. Embedded, its members stay top-level
// JSON members, so the signed bytes are those of the records before it.
type fleetRecord struct {
	Type  string `json:"type"`
	Seq   int64  `json:"seq"`
	Fleet string `json:"fleet"`
	Host  string `json:"host"`
}

// insertRecord stores rec as the next record of kind for this fleet,
// signed by the host key; head (rec's own head) gets typ, the new
// sequence, the fleet and this host.
func (p *provisioner) insertRecord(ctx context.Context, kind, typ string, head *fleetRecord, rec any) error {
	if err := p.h.PrepareSigner(); err != nil {
		return err
	}
	_, err := p.h.Versions().Insert(ctx, kind, p.fleet.Name, func(seq int64, _ *store.Version) ([]byte, []byte, error) {
		*head = fleetRecord{Type: typ, Seq: seq, Fleet: p.fleet.Name, Host: p.h.Policy.Host}
		return p.h.SignRecord(rec)
	})
	return err
}

// Provision provisions the host under home from the envelope at
// envelopeRef (REGISTRY/REPO:host-ID): it applies the fleet's revocation
// list (first, so a missing or refused envelope never keeps revocations
// from a host), verifies the envelope with the fleet keys of the host
// policy, copies the release with its signature and attestation into the
// host's OCI layout (blobs already there are not fetched again), admits it
// under the host policy, resolves it against the host's registry and
// connections, and binds it when the policy lets the fleet pre-approve and
// the plan stays inside the envelope's ceiling. Where the fleet may not
// bind (checked on the package's capabilities before admitting), the
// release is only checked, not admitted: the admission is left to a
// person, who admits and binds the new one; the release bound now (its
// admission side by side with the new one's) keeps being served until
// then. It then pushes the host's
// signed status next to the envelope, and its receipts log's newest
// checkpoint under log-<host> (PublishLog), on unchanged runs too.
//
// A refusal at any step after the envelope verified is returned and
// reported in the pushed status; a refused envelope pushes no status (the
// fleet revocations applied before it stay); a fault (the registry unreachable) returns before the status is
// pushed. Every step already done is recorded and skipped next time, so
// the next run finishes what an outage interrupted.
func Provision(ctx context.Context, home, envelopeRef string, opts ProvisionOptions) (*Result, error) {
	ref, err := oci.ParseRef(envelopeRef, oci.RefOptions{Home: home})
	if err != nil {
		return nil, err
	}
	if ref.Registry == "" || ref.Reference() == "" {
		return nil, blocking.New(blocking.FleetEnvelopeInvalid, "the envelope reference must be REGISTRY/REPO:host-ID")
	}
	h, err := host.Open(ctx, home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	if h.Policy.Fleet == nil {
		return nil, blocking.New(blocking.FleetNotTrusted, "the host policy has no fleet section")
	}
	opts.OpenOptions = h.Policy.ReleaseOptions(opts.OpenOptions) // every read held to this host's limits
	target, err := oci.Open(ctx, ref, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	now := opts.Now.UTC().Truncate(time.Second)
	p := &provisioner{h: h, home: home, repo: ref, target: target, opts: opts, now: now, fleet: h.Policy.Fleet}
	p.res.Status = &Status{
		Type: StatusType, Fleet: p.fleet.Name, Host: h.Policy.Host, State: Refused, Blocking: []blocking.Code{},
		Versions: Versions{OA: opts.Version, Protocol: ir.Protocol}, LastSeen: now,
	}
	if done, err := p.unchanged(ctx); err != nil || done {
		if err != nil {
			return nil, err
		}
		if p.res.Log, err = p.publishLog(ctx); err != nil {
			return nil, err
		}
		return &p.res, nil
	}
	refusal := p.run(ctx)
	if refusal != nil && blocking.Refusals(refusal) == nil {
		return nil, refusal // a fault: nothing to report yet
	}
	for _, r := range blocking.Refusals(refusal) {
		if !slices.Contains(p.res.Status.Blocking, r.Code) {
			p.res.Status.Blocking = append(p.res.Status.Blocking, r.Code)
		}
	}
	if !p.verified {
		// A missing, foreign or malformed envelope is a bad input: it is
		// refused and no status is pushed (revocations already applied stay).
		return nil, refusal
	}
	if err := p.pushStatus(ctx); err != nil {
		return nil, err
	}
	if p.res.Log, err = p.publishLog(ctx); err != nil {
		return nil, err
	}
	if refusal == nil && p.res.Status.State == Bound {
		if err := p.recordProvisioned(ctx); err != nil {
			return nil, err
		}
	}
	return &p.res, refusal
}

type provisioner struct {
	h      *host.Host
	home   string
	repo   oci.Ref
	target oci.Target
	opts   ProvisionOptions
	now    time.Time
	fleet  *host.FleetTrust
	res    Result
	// verified says the envelope verified: only then is a status pushed.
	verified bool
	// seen is what this run read: the manifests, expiries and signing
	// key of the envelope and revocation list, for recordProvisioned.
	seen provisionedRecord
	// release is the verified envelope's release reference, parsed once
	// where the envelope is checked (envelope) and read from by pull.
	release oci.Ref
}

// by is who the fleet's records name.
func (p *provisioner) by() string { return "fleet " + p.fleet.Name }

// keys are the fleet keys valid now, in name order.
func (p *provisioner) keys() []*signing.Verifier {
	var out []*signing.Verifier
	for _, name := range slices.Sorted(maps.Keys(p.fleet.Keys)) {
		if k := p.fleet.Keys[name]; k.ValidAt(p.now) {
			out = append(out, k.Verifier())
		}
	}
	return out
}

func (p *provisioner) run(ctx context.Context) error {
	st := p.res.Status
	// The revocation list comes first: whatever is wrong with this host's
	// envelope (missing, junk, older, for another host), the fleet's
	// revocations still reach it.
	if err := p.revocations(ctx); err != nil {
		if blocking.Refusals(err) == nil {
			return err
		}
		// Still report the refusal in a status when the envelope verifies.
		if env, _, eerr := p.envelope(ctx); eerr == nil {
			p.verified = true
			st.EnvelopeSeq, st.Deployment, st.Release = env.Seq, env.Deployment, env.ArtifactDigest
		} else if blocking.Refusals(eerr) == nil {
			return eerr
		}
		return err
	}
	env, envDigest, err := p.envelope(ctx)
	if err != nil {
		return err
	}
	p.verified = true
	st.EnvelopeSeq, st.Deployment, st.Release = env.Seq, env.Deployment, env.ArtifactDigest
	applied, err := p.applied(ctx)
	if err != nil {
		return err
	}
	if applied != nil && (env.Seq < applied.EnvelopeSeq || env.Seq == applied.EnvelopeSeq && envDigest != applied.EnvelopeDigest) {
		return blocking.New(blocking.FleetEnvelopeRollback, "envelope #%d after #%d", env.Seq, applied.EnvelopeSeq)
	}
	revoked, err := admit.HasRevocation(ctx, p.h, env.ArtifactDigest)
	if err != nil {
		return err
	}
	if revoked {
		st.State = Revoked
		if err := p.recordApplied(ctx, applied, env, envDigest); err != nil {
			return err
		}
		return blocking.New(blocking.ReleaseRevoked, "the envelope's release is revoked")
	}
	local, err := p.pull(ctx, env)
	if err != nil {
		if !waiting(err) {
			return err
		}
		// Not admitted: the person admits and binds (oa admit, oa bind).
		st.State = AwaitingApproval
		if rerr := p.recordApplied(ctx, applied, env, envDigest); rerr != nil {
			return rerr
		}
		return err
	}
	resolved := false
	b, err := bind.ResolveAndBind(ctx, p.h, bind.Request{
		Release:    local,
		Deployment: env.Deployment, Model: env.Model,
		By: p.by(), Now: p.now,
		Connector: p.opts.Connector, NoProbe: !p.opts.Probe,
		Gate: func(ctx context.Context, plan *resolve.Plan) (bool, error) {
			resolved = true
			st.PlanDigest = plan.Digest()
			return p.mayBind(ctx, env, plan)
		},
	})
	if err != nil && !resolved {
		return err
	}
	if err != nil {
		st.State = AwaitingApproval
		if blocking.Refusals(err) == nil {
			return err
		}
		if rerr := p.recordApplied(ctx, applied, env, envDigest); rerr != nil {
			return rerr
		}
		return err
	}
	p.res.Bound = b != nil
	st.State = Bound
	return p.recordApplied(ctx, applied, env, envDigest)
}

// envelope reads and verifies the envelope; it returns it with the digest
// of its signed bytes.
func (p *provisioner) envelope(ctx context.Context) (*Envelope, string, error) {
	doc, err := readDocument(ctx, p.target, EnvelopeArtifactType, p.repo.Reference())
	switch {
	case err == errMalformed:
		return nil, "", blocking.New(blocking.FleetEnvelopeInvalid, "the artifact is not an envelope")
	case err != nil:
		return nil, "", err
	case doc == nil:
		return nil, "", blocking.New(blocking.FleetEnvelopeMissing, "nothing is stored under the envelope's tag")
	}
	key := doc.verifiedBy(p.keys())
	if key == nil {
		return nil, "", blocking.New(blocking.FleetEnvelopeUnverified, "no fleet key valid now verifies it")
	}
	var env Envelope
	if doc.decode(&env) != nil || !knownEnvelopeType(env.Type) {
		return nil, "", blocking.New(blocking.FleetEnvelopeInvalid, "the envelope's JSON is not a canonical %s (or %s)", EnvelopeType, EnvelopeTypeV1)
	}
	if env.Fleet != p.fleet.Name || env.Host != p.h.Policy.Host {
		return nil, "", blocking.New(blocking.FleetEnvelopeWrongHost, "the envelope is for another host or fleet")
	}
	rel, err := envelopeRelease(&env)
	if err != nil || env.Seq < 1 || bind.CheckNames(env.Deployment, env.Model) != nil {
		return nil, "", blocking.New(blocking.FleetEnvelopeInvalid, "the envelope's release, deployment, model or sequence is malformed")
	}
	if env.IssuedAt.IsZero() || !env.ExpiresAt.After(env.IssuedAt) {
		return nil, "", blocking.New(blocking.FleetEnvelopeInvalid, "the envelope's issuedAt and expiresAt are missing or out of order")
	}
	if env.ExpiresAt.Sub(env.IssuedAt) > MaxExpiry {
		return nil, "", blocking.New(blocking.FleetEnvelopeInvalid, "the envelope's lifetime is longer than the maximum of 720h (30 days); the fleet must publish again")
	}
	if !p.now.Before(env.ExpiresAt) {
		return nil, "", blocking.New(blocking.FleetEnvelopeExpired, "envelope #%d expired %s", env.Seq, env.ExpiresAt.UTC().Format(time.RFC3339))
	}
	p.seen.EnvelopeManifest, p.seen.EnvelopeExpiresAt, p.seen.EnvelopeKey = doc.Desc.Digest.String(), env.ExpiresAt, key.KeyID()
	p.release = rel
	return &env, digest.FromBytes(doc.Payload).String(), nil
}

// envelopeRelease is env's Release read once, where the envelope is
// checked: a registry reference pinned to env's ArtifactDigest (else
// fleet_envelope_invalid). The envelope is signed, so its Release stays
// the string it was signed as; what reads the release reads this.
func envelopeRelease(env *Envelope) (oci.Ref, error) {
	rel, err := oci.ParseRef(env.Release, oci.RefOptions{})
	if err == nil && (rel.Registry == "" || rel.Digest.String() != env.ArtifactDigest) {
		err = blocking.New(blocking.FleetEnvelopeInvalid, "the envelope's release is not a registry reference pinned to its artifactDigest")
	}
	return rel, err
}

// applied returns the envelope the host last applied from this fleet.
func (p *provisioner) applied(ctx context.Context) (*appliedRecord, error) {
	var rec appliedRecord
	ok, err := p.readRecord(ctx, kindApplied, appliedType, &rec)
	if err != nil || !ok {
		return nil, err
	}
	return &rec, nil
}

// recordApplied records env as applied unless it already is.
func (p *provisioner) recordApplied(ctx context.Context, prev *appliedRecord, env *Envelope, envDigest string) error {
	if prev != nil && prev.EnvelopeSeq == env.Seq && prev.EnvelopeDigest == envDigest {
		return nil
	}
	rec := appliedRecord{EnvelopeSeq: env.Seq, EnvelopeDigest: envDigest}
	return p.insertRecord(ctx, kindApplied, appliedType, &rec.fleetRecord, &rec)
}

// kindRevocations is the store kind of the fleet revocation list a host
// last applied, per fleet: it keeps a host from going back to an older
// list, or to none, once it has seen one.
const kindRevocations = "fleet_revocations"

// revocationsAppliedType is the type of that record.
const revocationsAppliedType = "oa.fleet.revocations-applied/v1"

type revocationsRecord struct {
	fleetRecord
	ListSeq    int64  `json:"listSeq"`
	ListDigest string `json:"listDigest"`
}

// appliedRevocations returns the revocation list the host last applied
// from this fleet.
func (p *provisioner) appliedRevocations(ctx context.Context) (*revocationsRecord, error) {
	var rec revocationsRecord
	ok, err := p.readRecord(ctx, kindRevocations, revocationsAppliedType, &rec)
	if err != nil || !ok {
		return nil, err
	}
	return &rec, nil
}

// readRecord reads the latest host-signed record of kind for this fleet
// into out; false when there is none. A record that does not verify with
// the host key is refused (fleet_record_unverified).
func (p *provisioner) readRecord(ctx context.Context, kind, typ string, out any) (bool, error) {
	v, err := p.h.Versions().Latest(ctx, kind, p.fleet.Name)
	if err != nil || v == nil {
		return false, err
	}
	if err := p.h.ReadVersion(v, typ, out); err != nil {
		return false, blocking.New(blocking.FleetRecordUnverified, "the %s record #%d of fleet %s: %v", kind, v.Seq, p.fleet.Name, err)
	}
	return true, nil
}

// revocations applies the fleet's revocation list: every listed release
// not yet revoked here is revoked, permanently, by the host key. The
// list's sequence and digest are recorded, signed by the host key; an
// older list, another list of the same sequence, or no list once one was
// applied is refused (fleet_revocations_rollback), after whatever it
// lists is revoked here (revocations only ever take away).
func (p *provisioner) revocations(ctx context.Context) error {
	seen, err := p.appliedRevocations(ctx)
	if err != nil {
		return err
	}
	if seen != nil {
		p.res.Status.RevocationsSeq = seen.ListSeq
	}
	doc, err := readDocument(ctx, p.target, RevocationsArtifactType, RevocationsTag)
	switch {
	case err == errMalformed:
		return blocking.New(blocking.FleetRevocationsUnverified, "the revocation list is malformed")
	case err != nil:
		return err
	case doc == nil && seen != nil:
		return blocking.New(blocking.FleetRevocationsRollback, "there is no revocation list, after this host applied list #%d", seen.ListSeq)
	case doc == nil:
		return nil
	}
	var list Revocations
	key := doc.verifiedBy(p.keys())
	if key == nil || doc.decode(&list) != nil || list.Type != RevocationsType || list.Fleet != p.fleet.Name || list.Seq < 1 ||
		list.IssuedAt.IsZero() || !list.ExpiresAt.After(list.IssuedAt) {
		return blocking.New(blocking.FleetRevocationsUnverified, "no fleet key valid now verifies it, or it is not a dated revocation list")
	}
	if list.ExpiresAt.Sub(list.IssuedAt) > MaxExpiry {
		return blocking.New(blocking.FleetRevocationsUnverified, "the revocation list's lifetime is longer than the maximum of 720h (30 days); the fleet must publish again")
	}
	for _, r := range list.Revoked {
		if _, err := oci.ParseDigest(r.ArtifactDigest); err != nil {
			return blocking.New(blocking.FleetRevocationsUnverified, "the list names a malformed digest")
		}
	}
	for _, r := range list.Revoked {
		have, err := admit.HasRevocation(ctx, p.h, r.ArtifactDigest)
		if err != nil {
			return err
		}
		if have {
			continue
		}
		if _, err := admit.Revoke(ctx, p.h, r.ArtifactDigest, r.Reason, p.by(), p.now); err != nil {
			return err
		}
		p.res.Revoked = append(p.res.Revoked, r.ArtifactDigest)
	}
	listDigest := digest.FromBytes(doc.Payload).String()
	if seen != nil && (list.Seq < seen.ListSeq || list.Seq == seen.ListSeq && listDigest != seen.ListDigest) {
		return blocking.New(blocking.FleetRevocationsRollback, "revocation list #%d after #%d", list.Seq, seen.ListSeq)
	}
	if !p.now.Before(list.ExpiresAt) {
		// What it revokes stays revoked (revocations only take away), but
		// an expired list is not recorded as applied.
		return blocking.New(blocking.FleetRevocationsExpired, "revocation list #%d expired %s", list.Seq, list.ExpiresAt.UTC().Format(time.RFC3339))
	}
	p.res.Status.RevocationsSeq = list.Seq
	p.seen.RevocationsManifest, p.seen.RevocationsExpiresAt, p.seen.RevocationsKey = doc.Desc.Digest.String(), list.ExpiresAt, key.KeyID()
	if seen != nil && seen.ListSeq == list.Seq {
		return nil
	}
	rec := revocationsRecord{ListSeq: list.Seq, ListDigest: listDigest}
	return p.insertRecord(ctx, kindRevocations, revocationsAppliedType, &rec.fleetRecord, &rec)
}

// pull makes the release (p.release, as the envelope named it) actively
// admitted from the host's own OCI layout: copied (with signature and attestation) unless it is already
// admitted and there, then admitted under the host policy where the
// fleet's bind follows (else only checked: awaiting_approval or
// fleet_ceiling_exceeded, the admission left to the person). It returns
// the release as read from the host's layout, its Ref the local
// reference the binding records (Result.LocalRef).
func (p *provisioner) pull(ctx context.Context, env *Envelope) (*oci.Release, error) {
	rel := p.release
	// Built, not parsed from REPO@DIGEST: a repository's first part may
	// read as a registry host (oa.dev/clinic).
	local, err := oci.LocalRef(p.home, rel.Repository, rel.Digest)
	if err != nil {
		return nil, err
	}
	p.res.LocalRef = local.String()
	dst, err := oci.Open(ctx, local, oci.OpenOptions{Create: true, Limits: p.opts.OpenOptions.Limits})
	if err != nil {
		return nil, err
	}
	status, err := admit.StatusOf(ctx, p.h, env.ArtifactDigest, p.now)
	if err != nil {
		return nil, err
	}
	desc, err := oci.Resolve(ctx, dst, env.ArtifactDigest)
	if status.State == admit.Active && err == nil {
		return &oci.Release{Ref: local, Target: dst, Descriptor: desc}, nil
	}
	src, err := oci.Open(ctx, rel, p.opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	copied, err := oci.Copy(ctx, src, dst, ocispec.Descriptor{Digest: digest.Digest(env.ArtifactDigest)}, "")
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, blocking.New(blocking.ArtifactNotFound, "the registry has no %s: %v", env.Release, err)
	}
	if err != nil {
		return nil, err
	}
	p.res.Copied = copied
	if desc, err = oci.Resolve(ctx, dst, env.ArtifactDigest); err != nil {
		return nil, err
	}
	pulled := &oci.Release{Ref: local, Target: dst, Descriptor: desc}
	if status.State != admit.Active {
		if err := p.admitPulled(ctx, env, pulled); err != nil {
			return nil, err
		}
	}
	return pulled, nil
}

// admitPulled admits the release just pulled where the fleet's bind
// follows. Releases of a package are admitted and kept side by side
// (admit.Admit, bind's release store), so admitting this one would not
// retire the release bound now; but an admission is a person's decision
// the fleet makes only where its bind follows. Elsewhere the checks run
// as a dry run and the admission is left to the person: the refusal
// returned is why the host waits (awaiting_approval or
// fleet_ceiling_exceeded).
func (p *provisioner) admitPulled(ctx context.Context, env *Envelope, rel *oci.Release) error {
	art, err := oci.Fetch(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	if err != nil {
		return err
	}
	caps := make([]capRisk, len(art.Worker.Capabilities))
	for i, c := range art.Worker.Capabilities {
		caps[i] = capRisk{c.Key, c.Risk}
	}
	wait := p.preApproves(env, caps)
	if cur, err := bind.Current(ctx, p.h, env.Deployment); wait == nil && err == nil {
		wait = p.mayRebind(cur, env)
	}
	if wait == nil && len(env.Ceiling.Publishers) > 0 {
		// Which publisher signed is known once the host's checks ran:
		// a dry run first, admitted only when the ceiling names it.
		d, _, err := admit.Admit(ctx, p.h, rel, admit.AdmitOptions{AdmittedBy: p.by(), Now: p.now, DryRun: true})
		if err != nil {
			return err
		}
		wait = p.publisherInCeiling(env, d.PublisherKeyID, d.PublisherSigner, p.h.Policy.Publishers[d.Publisher].TrustedRootDigest)
	}
	if _, _, err := admit.Admit(ctx, p.h, rel, admit.AdmitOptions{AdmittedBy: p.by(), Now: p.now, DryRun: wait != nil}); err != nil {
		return err
	}
	if wait != nil {
		p.res.NeedsAdmission = true
		return wait
	}
	p.res.Admitted = true
	return nil
}

// capRisk is one capability and its risk.
type capRisk struct {
	key  string
	risk ir.Risk
}

// preApproves refuses where the fleet may not bind caps on this host:
// fleet_ceiling_exceeded where one leaves the envelope's ceiling,
// awaiting_approval where the policy does not let the fleet pre-approve.
func (p *provisioner) preApproves(env *Envelope, caps []capRisk) error {
	var outside []string
	for _, c := range caps {
		if !slices.Contains(env.Ceiling.Capabilities, c.key) || !withinRisk(c.risk, env.Ceiling.MaxRisk) {
			outside = append(outside, c.key)
		}
	}
	if len(outside) > 0 {
		return blocking.New(blocking.FleetCeilingExceeded, "capabilities %v are outside the envelope's ceiling", outside)
	}
	if !p.fleet.PreApprove {
		return blocking.New(blocking.AwaitingApproval, "the host policy does not let the fleet pre-approve (fleet.pre_approve)")
	}
	return nil
}

// publisherInCeiling refuses fleet_publisher_not_in_ceiling where the
// envelope's ceiling names publishers and the admitted one (its key id,
// certificate identity and trusted root digest) is none of them.
func (p *provisioner) publisherInCeiling(env *Envelope, keyID string, signer *signing.CertIdentity, rootDigest string) error {
	if len(env.Ceiling.Publishers) == 0 {
		return nil
	}
	for _, c := range env.Ceiling.Publishers {
		if c.Admits(keyID, signer, rootDigest) {
			return nil
		}
	}
	return blocking.New(blocking.FleetPublisherNotInCeiling, "the release's publisher is none of the %d the envelope's ceiling names", len(env.Ceiling.Publishers))
}

// waiting reports whether err only says a person must approve.
func waiting(err error) bool {
	rs := blocking.Refusals(err)
	for _, r := range rs {
		if r.Code != blocking.AwaitingApproval && r.Code != blocking.FleetCeilingExceeded && r.Code != blocking.FleetPublisherNotInCeiling {
			return false
		}
	}
	return len(rs) > 0
}

// mayBind is the fleet's approval between resolving and binding: false
// where the deployment's binding already is this plan (nothing to bind);
// awaiting_approval where the fleet may not pre-approve or a person bound
// the deployment, fleet_ceiling_exceeded where the plan leaves the
// envelope's ceiling.
func (p *provisioner) mayBind(ctx context.Context, env *Envelope, plan *resolve.Plan) (bool, error) {
	cur, err := bind.Current(ctx, p.h, env.Deployment)
	if err == nil && cur.PlanDigest == plan.Digest() {
		return false, nil
	}
	if err != nil && blocking.Refusals(err) == nil {
		return false, err
	}
	if err == nil {
		if err := p.mayRebind(cur, env); err != nil {
			return false, err
		}
	}
	caps := make([]capRisk, len(plan.Capabilities))
	for i, e := range plan.Capabilities {
		caps[i] = capRisk{e.CapabilityKey, e.Risk}
	}
	if err := p.preApproves(env, caps); err != nil {
		return true, err
	}
	if len(env.Ceiling.Publishers) == 0 {
		return true, nil
	}
	st, err := admit.StatusOf(ctx, p.h, env.ArtifactDigest, p.now)
	if err != nil {
		return false, err
	}
	if st.Record == nil {
		return true, blocking.New(blocking.AwaitingApproval, "the release has no admission on this host")
	}
	pub := st.Record.Publisher
	return true, p.publisherInCeiling(env, pub.KeyID, pub.Signer, pub.TrustedRootDigest)
}

// mayRebind refuses to replace a binding a person approved with the
// fleet's own approval: the person binds the new plan (after admitting the
// new release), and until then the release they bound stays served.
func (p *provisioner) mayRebind(cur *bind.Binding, env *Envelope) error {
	if cur.ApprovedBy != p.by() {
		return blocking.New(blocking.AwaitingApproval, "deployment %s was bound by a person; the fleet does not rebind it", env.Deployment)
	}
	return nil
}

// pushStatus signs the status with the host key and pushes it under
// status-<host>, with the host's public key beside it.
func (p *provisioner) pushStatus(ctx context.Context) error {
	payload, sig, err := p.h.SignRecord(p.res.Status)
	if err != nil {
		return err
	}
	pub, err := os.ReadFile(filepath.Join(p.home, host.HostPubFile))
	if err != nil {
		return fmt.Errorf("reading host key: %w", err)
	}
	_, err = pushDocument(ctx, p.target, StatusArtifactType, StatusTag(p.h.Policy.Host), payload, sig, p.h.KeyID(), pub)
	return err
}

// kindProvisioned is the store kind of the last run that left the host
// bound, per fleet: what it read, so the next run can tell nothing
// changed from two manifest HEADs.
const kindProvisioned = "fleet_provisioned"

// provisionedType is the type of that record.
const provisionedType = "oa.fleet.provisioned/v1"

type provisionedRecord struct {
	// fleetRecord's Fleet and Host are whose documents were read.
	fleetRecord
	// EnvelopeManifest is the manifest digest of the envelope applied;
	// RevocationsManifest the revocation list's, empty when there was
	// none. Content addressing makes an equal digest the same bytes.
	EnvelopeManifest     string    `json:"envelopeManifest"`
	EnvelopeExpiresAt    time.Time `json:"envelopeExpiresAt"`
	EnvelopeKey          string    `json:"envelopeKey"`
	RevocationsManifest  string    `json:"revocationsManifest"`
	RevocationsExpiresAt time.Time `json:"revocationsExpiresAt"`
	RevocationsKey       string    `json:"revocationsKey"`
	EnvelopeSeq          int64     `json:"envelopeSeq"`
	RevocationsSeq       int64     `json:"revocationsSeq"`
	Deployment           string    `json:"deployment"`
	Release              string    `json:"release"`
	PlanDigest           string    `json:"planDigest"`
	LocalRef             string    `json:"localRef"`
	// StatusPushedAt is when the status reporting it was pushed.
	StatusPushedAt time.Time `json:"statusPushedAt"`
}

// recordProvisioned records, signed by the host key, what a run that
// left the host bound read and pushed.
func (p *provisioner) recordProvisioned(ctx context.Context) error {
	st := p.res.Status
	rec := p.seen
	rec.EnvelopeSeq, rec.RevocationsSeq = st.EnvelopeSeq, st.RevocationsSeq
	rec.Deployment, rec.Release, rec.PlanDigest, rec.LocalRef = st.Deployment, st.Release, st.PlanDigest, p.res.LocalRef
	rec.StatusPushedAt = p.now
	return p.insertRecord(ctx, kindProvisioned, provisionedType, &rec.fleetRecord, &rec)
}

// unchanged reports whether nothing changed since the last run that left
// the host bound, and if so fills the result as that run left it. It
// costs the envelope's and the revocation list's manifest HEADs and local
// reads verified with the host public key: no blob, no host-key
// decryption, no status. Nothing changed means: the same envelope and
// list (by manifest digest), neither expired, their signing keys still
// valid under the host policy, the binding the same plan, the release
// still actively admitted and not revoked, and the last status pushed
// within StatusRefresh. Connections are not probed: the coordinator
// checks their tool lists at session start and before each call. Any
// doubt (a failed HEAD included) means a full run, which reports it.
func (p *provisioner) unchanged(ctx context.Context) (bool, error) {
	var rec provisionedRecord
	ok, err := p.readRecord(ctx, kindProvisioned, provisionedType, &rec)
	if err != nil || !ok || rec.Fleet != p.fleet.Name || rec.Host != p.h.Policy.Host {
		return false, nil // a damaged record only means a full run
	}
	// The applied records are checked as in a full run: a tampered one is
	// refused, never skipped over.
	applied, err := p.applied(ctx)
	if err != nil {
		return false, err
	}
	seenList, err := p.appliedRevocations(ctx)
	if err != nil {
		return false, err
	}
	if applied == nil || applied.EnvelopeSeq != rec.EnvelopeSeq || rec.RevocationsManifest != "" && (seenList == nil || seenList.ListSeq != rec.RevocationsSeq) {
		return false, nil
	}
	refresh := p.opts.StatusRefresh
	if refresh <= 0 {
		refresh = DefaultStatusRefresh
	}
	if !p.now.Before(rec.StatusPushedAt.Add(refresh)) || p.now.Before(rec.StatusPushedAt) ||
		!p.now.Before(rec.EnvelopeExpiresAt) || rec.RevocationsManifest != "" && !p.now.Before(rec.RevocationsExpiresAt) {
		return false, nil
	}
	valid := map[string]bool{}
	for _, k := range p.keys() {
		valid[k.KeyID()] = true
	}
	if !valid[rec.EnvelopeKey] || rec.RevocationsManifest != "" && !valid[rec.RevocationsKey] {
		return false, nil
	}
	if desc, err := p.target.Resolve(ctx, p.repo.Reference()); err != nil || desc.Digest.String() != rec.EnvelopeManifest {
		return false, nil
	}
	desc, err := p.target.Resolve(ctx, RevocationsTag)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		if rec.RevocationsManifest != "" {
			return false, nil
		}
	case err != nil || desc.Digest.String() != rec.RevocationsManifest:
		return false, nil
	}
	if cur, err := bind.Current(ctx, p.h, rec.Deployment); err != nil || cur.PlanDigest != rec.PlanDigest {
		return false, nil
	}
	if revoked, err := admit.HasRevocation(ctx, p.h, rec.Release); err != nil || revoked {
		return false, nil
	}
	if status, err := admit.StatusOf(ctx, p.h, rec.Release, p.now); err != nil || status.State != admit.Active {
		return false, nil
	}
	st := p.res.Status
	st.State, st.EnvelopeSeq, st.RevocationsSeq = Bound, rec.EnvelopeSeq, rec.RevocationsSeq
	st.Deployment, st.Release, st.PlanDigest = rec.Deployment, rec.Release, rec.PlanDigest
	p.res.LocalRef, p.res.Unchanged = rec.LocalRef, true
	return true, nil
}
