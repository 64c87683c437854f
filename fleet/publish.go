package fleet

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// EnvelopeType is the type of a provisioning envelope publishing writes:
// since v2 every name in it is camelCase, its ceiling's too (maxRisk,
// trustedRootDigest, issuerRegexp, subjectRegexp). A host still reads
// EnvelopeTypeV1 (envelope_json.go).
const EnvelopeType = "oa.fleet.envelope/v2"

// Envelope is what a fleet tells one host to run. It carries the release
// by digest, the deployment settings and the ceiling the fleet
// pre-approves, as exact capability keys of the package; never a secret, a
// connection id or anything host-local. Seq grows each time the host's
// envelope changes (to the later of the old Seq plus one and the Unix time
// of publishing, so it never goes back, even over a lost tag); an
// unchanged fleet keeps it.
type Envelope struct {
	Type           string  `json:"type"`
	Fleet          string  `json:"fleet"`
	Host           string  `json:"host"`
	Seq            int64   `json:"seq"`
	Deployment     string  `json:"deployment"`
	Release        string  `json:"release"`
	ArtifactDigest string  `json:"artifactDigest"`
	WorkerIRDigest string  `json:"workerIrDigest"`
	Package        string  `json:"package"`
	Version        string  `json:"version"`
	Model          string  `json:"model"`
	Ceiling        Ceiling `json:"ceiling"`
	// IssuedAt and ExpiresAt bound how long a host believes the envelope:
	// a host refuses it from ExpiresAt on (fleet_envelope_expired), so a
	// registry that keeps serving an old envelope (a freeze) is noticed.
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// DefaultExpiry is the lifetime of an envelope or revocation list when
// Options.ExpiresIn is not set: a week. Publishing re-signs a document
// once it is past half its lifetime, so publishing at least every few days
// keeps every host's documents current.
const DefaultExpiry = 168 * time.Hour

// MinExpiry and MaxExpiry bound the lifetime of what is published. The
// expiry is what bounds how long a registry can freeze a host on an old
// document unnoticed, so it may not be stretched past 30 days; hosts
// refuse a document whose lifetime is longer (one published before this
// bound, or by another tool), and publishing re-signs one already out
// there.
const (
	MinExpiry = time.Minute
	MaxExpiry = 30 * 24 * time.Hour
)

// CheckExpiry refuses a lifetime outside MinExpiry … MaxExpiry
// (fleet_expiry_invalid).
func CheckExpiry(lifetime time.Duration) error {
	if lifetime < MinExpiry || lifetime > MaxExpiry {
		return blocking.New(blocking.FleetExpiryInvalid, "the lifetime must be between 1m and 720h (30 days)")
	}
	return nil
}

// Hint annotations on a document layer: the fields publishing needs to
// rebuild an unchanged document, so it can tell "unchanged" from the
// manifest alone (one request per host). Never believed: only a rebuilt
// payload with the layer's digest is used.
const (
	hintSeq       = "dev.oa.fleet.seq"
	hintIssuedAt  = "dev.oa.fleet.issued-at"
	hintExpiresAt = "dev.oa.fleet.expires-at"
)

// publishConcurrency bounds the requests publishing keeps in flight to
// the fleet's registry.
const publishConcurrency = 16

// Options say how the registry is reached and how long what is published
// stays valid.
type Options struct {
	oci.OpenOptions
	// ExpiresIn is the lifetime of the documents published; zero is
	// DefaultExpiry.
	ExpiresIn time.Duration
	// Now is the time of publishing; zero is the current time.
	Now time.Time
	// Progress, when set, is told of each host as Publish finishes with it:
	// once when its current envelope has been read (PhaseRead) and once
	// when its new one is written or found unchanged (PhaseWrite). Calls
	// come one at a time, never concurrently, so a fleet of many hosts can
	// show how far it has come.
	Progress func(PublishProgress)
	// unbounded lets tests publish a lifetime over MaxExpiry, as an older
	// publisher could have.
	unbounded bool
}

// PublishPhase is a pass Publish makes over the hosts.
type PublishPhase string

const (
	// PhaseRead reads and verifies every host's current envelope, before
	// anything is written.
	PhaseRead PublishPhase = "read"
	// PhaseWrite writes the envelopes that change.
	PhaseWrite PublishPhase = "write"
)

// PublishProgress is how far Publish has come in a phase: Done of Total
// hosts, Host the one just finished.
type PublishProgress struct {
	Phase       PublishPhase
	Host        string
	Done, Total int
}

// progressCounter counts the hosts finished in one phase and tells
// report, one call at a time; a nil report counts nothing.
type progressCounter struct {
	lock   sync.Mutex
	phase  PublishPhase
	done   int
	total  int
	report func(PublishProgress)
}

// finished records host as done and reports it.
func (c *progressCounter) finished(host string) {
	if c.report == nil {
		return
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	c.done++
	c.report(PublishProgress{Phase: c.phase, Host: host, Done: c.done, Total: c.total})
}

// checkExpiry refuses the options' lifetime outside MinExpiry … MaxExpiry.
func (o Options) checkExpiry() error {
	if o.unbounded {
		return nil
	}
	return CheckExpiry(o.lifetime())
}

// now is the publishing time, to the second.
func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now().UTC().Truncate(time.Second)
	}
	return o.Now.UTC().Truncate(time.Second)
}

// lifetime is ExpiresIn or its default.
func (o Options) lifetime() time.Duration {
	if o.ExpiresIn <= 0 {
		return DefaultExpiry
	}
	return o.ExpiresIn
}

// stale reports whether a document issued at issued and expiring at
// expires is to be re-signed at now by a publisher whose lifetime is
// lifetime: past half its own lifetime, or expiring later than one signed
// now would (an over-long expiry is never kept).
func stale(issued, expires, now time.Time, lifetime time.Duration) bool {
	return !now.Before(issued.Add(expires.Sub(issued)/2)) || expires.After(now.Add(lifetime))
}

// timeHints are the hint annotations of a document with seq and times.
func timeHints(seq int64, issued, expires time.Time) map[string]string {
	return map[string]string{
		hintSeq:       strconv.FormatInt(seq, 10),
		hintIssuedAt:  issued.UTC().Format(time.RFC3339),
		hintExpiresAt: expires.UTC().Format(time.RFC3339),
	}
}

// hints are an envelope's sequence and lifetime as its manifest's
// annotations give them.
type hints struct {
	seq             int64
	issued, expires time.Time
}

// parseHints reads the hint annotations; false when any is missing or
// malformed.
func parseHints(a map[string]string) (hints, bool) {
	seq, err1 := strconv.ParseInt(a[hintSeq], 10, 64)
	issued, err2 := time.Parse(time.RFC3339, a[hintIssuedAt])
	expires, err3 := time.Parse(time.RFC3339, a[hintExpiresAt])
	return hints{seq, issued.UTC(), expires.UTC()}, err1 == nil && err2 == nil && err3 == nil
}

// Published is what publishing did for one host.
type Published struct {
	Host       string `json:"host"`
	Deployment string `json:"deployment,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Seq        int64  `json:"seq,omitempty"`
	// Digest is the manifest digest of the host's envelope.
	Digest string `json:"digest,omitempty"`
	// Changed says a new envelope was pushed; false means the registry
	// already held this one.
	Changed bool `json:"changed"`
}

// Publish writes one envelope per host a deployment selects, signed with
// key, to the fleet's repository under host-<id>. Every release is read
// and verified first and every refusal found before anything is written;
// a host whose envelope would not change, and is not past half its
// lifetime, is not written at all and costs one manifest request. Hosts
// are read and written with bounded concurrency over one pooled client.
func Publish(ctx context.Context, s *Spec, key *signing.Signer, opts Options) ([]Published, error) {
	if err := opts.checkExpiry(); err != nil {
		return nil, err
	}
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	envs, err := s.envelopes(ctx, opts)
	if err != nil {
		return nil, err
	}
	now := opts.now()
	ids := slices.Sorted(maps.Keys(envs))
	// Read every current envelope before writing any.
	plans := make([]*envelopePlan, len(ids))
	read := &progressCounter{phase: PhaseRead, total: len(ids), report: opts.Progress}
	err = parallel(ctx, len(ids), func(i int) error {
		p, err := planEnvelope(ctx, target, key, envs[ids[i]], now, opts.lifetime())
		if err == nil && p.mismatch {
			err = blocking.New(blocking.FleetKeyMismatch, "the envelope under %s", EnvelopeTag(ids[i])).At(s.Pos("hosts", ids[i]), "hosts."+ids[i])
		}
		plans[i] = p
		read.finished(ids[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(plans, func(p *envelopePlan) bool { return !p.same }) {
		// The empty config every document shares, once, before the writers.
		if _, err := oci.PushIfMissing(ctx, target, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
			return nil, err
		}
	}
	pubs := make([]*Published, len(ids))
	written := &progressCounter{phase: PhaseWrite, total: len(ids), report: opts.Progress}
	err = parallel(ctx, len(ids), func(i int) error {
		p := plans[i]
		pub := &Published{Host: ids[i], Deployment: p.env.Deployment, Tag: EnvelopeTag(ids[i]), Seq: p.env.Seq, Digest: p.digest}
		pubs[i] = pub
		if p.same {
			written.finished(ids[i])
			return nil
		}
		payload, err := canonical.Marshal(p.env)
		if err != nil {
			return err
		}
		sig, err := key.SignBytes(payload)
		if err != nil {
			return err
		}
		desc, err := pushHinted(ctx, target, EnvelopeArtifactType, pub.Tag, payload, sig, key.KeyID(), nil, timeHints(p.env.Seq, p.env.IssuedAt, p.env.ExpiresAt), true)
		if err != nil {
			return err
		}
		pub.Digest, pub.Changed = desc.Digest.String(), true
		written.finished(ids[i])
		return nil
	})
	byHost := map[string]*Published{}
	for _, pub := range pubs {
		if pub != nil {
			byHost[pub.Host] = pub
		}
	}
	var out []Published
	for _, id := range slices.Sorted(maps.Keys(s.Hosts)) {
		if pub, ok := byHost[id]; ok {
			out = append(out, *pub)
		} else if _, assigned := envs[id]; !assigned {
			out = append(out, Published{Host: id})
		}
	}
	return out, err
}

// envelopePlan is what publishing will do for one host.
type envelopePlan struct {
	env *Envelope
	// same says the registry holds env already (digest is its manifest).
	same   bool
	digest string
	// mismatch says the current envelope is signed by another key.
	mismatch bool
}

// planEnvelope reads the host's current envelope and sets env's sequence
// and times: kept when nothing but time changed and the current one is
// not past half its lifetime; otherwise a new sequence, the later of the
// old one's plus one and the current Unix time (so it goes above anything
// a host may have applied even when the old envelope is gone or
// unreadable), issued now.
func planEnvelope(ctx context.Context, target oci.Target, key *signing.Signer, env *Envelope, now time.Time, lifetime time.Duration) (*envelopePlan, error) {
	p := &envelopePlan{env: env}
	fresh := func() {
		env.IssuedAt, env.ExpiresAt = now, now.Add(lifetime)
	}
	guess := func(a map[string]string) []byte {
		h, ok := parseHints(a)
		if !ok {
			return nil
		}
		e := *env
		e.Seq, e.IssuedAt, e.ExpiresAt = h.seq, h.issued, h.expires
		b, err := canonical.Marshal(&e)
		if err != nil {
			return nil
		}
		return b
	}
	doc, err := readHinted(ctx, target, EnvelopeArtifactType, EnvelopeTag(env.Host), guess)
	switch {
	case err == errMalformed || err == nil && doc == nil:
		env.Seq = now.Unix()
		fresh()
		return p, nil
	case err != nil:
		return nil, err
	}
	if doc.verifiedBy([]*signing.Verifier{key.Verifier()}) == nil {
		p.mismatch = true
		return p, nil
	}
	var old Envelope
	if doc.decode(&old) != nil {
		env.Seq = now.Unix()
		fresh()
		return p, nil
	}
	env.Seq, env.IssuedAt, env.ExpiresAt = old.Seq, old.IssuedAt, old.ExpiresAt
	if equalJSON(env, &old) && !stale(old.IssuedAt, old.ExpiresAt, now, lifetime) {
		p.same, p.digest = true, doc.Desc.Digest.String()
		return p, nil
	}
	env.Seq = max(old.Seq+1, now.Unix())
	fresh()
	return p, nil
}

// parallel runs f(0) … f(n-1), at most publishConcurrency at a time, and
// returns the first fault, else the refusals of all that refused, in one
// list ordered by location.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	var (
		wg      sync.WaitGroup
		lock    sync.Mutex
		fault   error
		refused blocking.List
	)
	sem := make(chan struct{}, publishConcurrency)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := f(i)
			if err == nil {
				return
			}
			lock.Lock()
			defer lock.Unlock()
			if rs := blocking.Refusals(err); rs != nil {
				refused = append(refused, rs...)
			} else if fault == nil {
				fault = err
			}
		}()
	}
	wg.Wait()
	if fault != nil {
		return fault
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	slices.SortStableFunc(refused, func(a, b *blocking.Error) int { return strings.Compare(a.Path, b.Path) })
	return refused.Err()
}

// equalJSON reports whether a and b encode to the same canonical JSON.
func equalJSON(a, b any) bool {
	x, err1 := canonical.Marshal(a)
	y, err2 := canonical.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// envelopes reads each deployment's release, verifies it and derives each
// assigned host's envelope (Seq not yet set). A ceiling pattern that
// matches no capability of the package is refused: a ceiling only narrows.
func (s *Spec) envelopes(ctx context.Context, opts Options) (map[string]*Envelope, error) {
	assigned := s.Assignments()
	used := map[string]bool{}
	for _, d := range assigned {
		used[d] = true
	}
	var refused blocking.List
	type release struct {
		art *oci.Artifact
		eff Ceiling
	}
	releases := map[string]release{}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		d := s.Deployments[name]
		target, err := oci.Open(ctx, d.ref, opts.OpenOptions)
		if err != nil {
			return nil, err
		}
		desc, err := oci.Resolve(ctx, target, d.ref.Digest.String())
		if err != nil {
			if blocking.Refusals(err) == nil {
				return nil, err // a fault: the registry cannot be read
			}
			refused = append(refused, located(err, s.Pos("deployments", name, "release"), "deployments."+name+".release")...)
			continue
		}
		art, err := oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
		if err != nil {
			if blocking.Refusals(err) == nil {
				return nil, err
			}
			refused = append(refused, located(err, s.Pos("deployments", name, "release"), "deployments."+name+".release")...)
			continue
		}
		eff, bad := narrow(d.Ceiling, art.Worker)
		for _, i := range bad {
			refused = append(refused, blocking.New(blocking.FleetCeilingOutsidePackage, "the pattern matches no capability of %s", art.Worker.Name).
				At(s.Pos("deployments", name, "ceiling", "capabilities", strconv.Itoa(i)), "deployments."+name+".ceiling.capabilities["+strconv.Itoa(i)+"]"))
		}
		releases[name] = release{art, eff}
	}
	if err := refused.Err(); err != nil {
		return nil, err
	}
	out := map[string]*Envelope{}
	for id, name := range assigned {
		d, r := s.Deployments[name], releases[name]
		w := r.art.Worker
		out[id] = &Envelope{
			Type: EnvelopeType, Fleet: s.Name, Host: id, Deployment: name,
			Release: d.ref.String(), ArtifactDigest: d.ref.Digest.String(), WorkerIRDigest: r.art.IRDigest,
			Package: w.Name, Version: w.Version, Model: d.Model, Ceiling: r.eff,
		}
	}
	return out, nil
}

// located places every refusal of err at pos and path.
func located(err error, pos, path string) blocking.List {
	var out blocking.List
	for _, r := range blocking.Refusals(err) {
		c := *r
		out = append(out, c.At(pos, path))
	}
	return out
}

// narrow intersects a fleet ceiling with the package's capabilities: the
// exact keys the patterns allow whose risk is within max_risk, sorted. It
// returns the indexes of patterns that match no capability.
func narrow(c Ceiling, w *ir.Worker) (Ceiling, []int) {
	out := Ceiling{Capabilities: []string{}, MaxRisk: c.MaxRisk, Publishers: c.Publishers}
	var bad []int
	for i, p := range c.Capabilities {
		if !slices.ContainsFunc(w.Capabilities, func(cap ir.Capability) bool { return ir.CeilingAllows([]string{p}, cap.Key) }) {
			bad = append(bad, i)
		}
	}
	for _, cap := range w.Capabilities {
		if ir.CeilingAllows(c.Capabilities, cap.Key) && withinRisk(cap.Risk, c.MaxRisk) {
			out.Capabilities = append(out.Capabilities, cap.Key)
		}
	}
	slices.Sort(out.Capabilities)
	return out, bad
}

// withinRisk reports whether risk r is at most max.
func withinRisk(r, max ir.Risk) bool { return r == ir.ReadOnly || max == ir.Consequential }

// Revocation list.

// RevocationsType is the type of a fleet revocation list.
const RevocationsType = "oa.fleet.revocations/v1"

// Revocations is the fleet's signed revocation list: every release the
// fleet has revoked, permanent and in the order revoked.
type Revocations struct {
	Type    string          `json:"type"`
	Fleet   string          `json:"fleet"`
	Seq     int64           `json:"seq"`
	Revoked []RevokedDigest `json:"revoked"`
	// IssuedAt and ExpiresAt bound how long hosts believe the list
	// (fleet_revocations_expired from ExpiresAt on): withholding newer
	// revocations by serving an old list is noticed within the lifetime.
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// RevokedDigest is one revoked release.
type RevokedDigest struct {
	ArtifactDigest string    `json:"artifactDigest"`
	Reason         string    `json:"reason"`
	RevokedBy      string    `json:"revokedBy"`
	RevokedAt      time.Time `json:"revokedAt"`
}

// Has reports whether d is on the list.
func (r *Revocations) Has(d string) bool {
	return slices.ContainsFunc(r.Revoked, func(x RevokedDigest) bool { return x.ArtifactDigest == d })
}

// RevocationOptions are the settings of PublishRevocation.
type RevocationOptions struct {
	Options
	// Reset starts a new list when the current one is not a list of this
	// fleet verified by the key (damaged, foreign, undecodable). The new
	// list's sequence is above any the old one could have had (the later
	// of its own plus one and the current Unix time), so hosts take it.
	Reset bool
}

// PublishRevocation adds artifactDigest to the fleet's revocation list,
// signed with key. A digest already listed changes nothing. A current list
// that is signed by another key (fleet_key_mismatch), malformed or not a
// list of this fleet (fleet_revocations_unverified) is refused before
// anything is written, unless opts.Reset starts a new list.
func PublishRevocation(ctx context.Context, s *Spec, key *signing.Signer, artifactDigest digest.Digest, reason, by string, now time.Time, opts RevocationOptions) (*Revocations, bool, error) {
	if err := host.CheckPerson(by, "the fleet revocation"); err != nil {
		return nil, false, err
	}
	if err := opts.checkExpiry(); err != nil {
		return nil, false, err
	}
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, false, err
	}
	list := &Revocations{Type: RevocationsType, Fleet: s.Name, Revoked: []RevokedDigest{}}
	doc, err := readDocument(ctx, target, RevocationsArtifactType, RevocationsTag)
	var refusal error
	switch {
	case err == errMalformed:
		refusal = blocking.New(blocking.FleetRevocationsUnverified, "the artifact under %s is not a revocation list", RevocationsTag)
	case err != nil:
		return nil, false, err
	case doc != nil:
		var old Revocations
		decoded := doc.decode(&old) == nil
		switch {
		case doc.verifiedBy([]*signing.Verifier{key.Verifier()}) == nil:
			refusal = blocking.New(blocking.FleetKeyMismatch, "the revocation list under %s", RevocationsTag)
		case !decoded || old.Type != RevocationsType || old.Fleet != s.Name || old.Seq < 1:
			refusal = blocking.New(blocking.FleetRevocationsUnverified, "the list under %s is not a revocation list of fleet %s", RevocationsTag, s.Name)
		default:
			list = &old
		}
		if refusal != nil && decoded {
			list.Seq = max(old.Seq, 0)
		}
	}
	if refusal != nil {
		if !opts.Reset {
			return nil, false, refusal
		}
		// A new list, numbered above anything hosts may have applied.
		list.Seq = max(list.Seq, now.Unix()-1)
	}
	if list.Has(artifactDigest.String()) {
		return list, false, nil
	}
	list.Seq++
	list.Revoked = append(list.Revoked, RevokedDigest{ArtifactDigest: artifactDigest.String(), Reason: reason, RevokedBy: by, RevokedAt: now.UTC().Truncate(time.Second)})
	if err := pushRevocations(ctx, target, key, list, now, opts.lifetime()); err != nil {
		return nil, false, err
	}
	return list, true, nil
}

// pushRevocations signs list, issued at now for lifetime, and pushes it.
func pushRevocations(ctx context.Context, target oci.Target, key *signing.Signer, list *Revocations, now time.Time, lifetime time.Duration) error {
	list.IssuedAt = now.UTC().Truncate(time.Second)
	list.ExpiresAt = list.IssuedAt.Add(lifetime)
	payload, err := canonical.Marshal(list)
	if err != nil {
		return err
	}
	sig, err := key.SignBytes(payload)
	if err != nil {
		return err
	}
	_, err = pushHinted(ctx, target, RevocationsArtifactType, RevocationsTag, payload, sig, key.KeyID(), nil, timeHints(list.Seq, list.IssuedAt, list.ExpiresAt), false)
	return err
}

// RefreshRevocations re-signs the fleet's revocation list, unchanged but
// with the next sequence and a new lifetime, when it is past half its
// lifetime, so hosts never see it expire while the fleet publishes. No
// list, or one this key did not sign or that does not decode, is left as
// it is (oa revoke --publish --reset-revocations replaces it). It returns
// the list when it was re-signed.
func RefreshRevocations(ctx context.Context, s *Spec, key *signing.Signer, opts Options) (*Revocations, error) {
	if err := opts.checkExpiry(); err != nil {
		return nil, err
	}
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	doc, err := readDocument(ctx, target, RevocationsArtifactType, RevocationsTag)
	if err == errMalformed || err == nil && doc == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list Revocations
	if doc.verifiedBy([]*signing.Verifier{key.Verifier()}) == nil || doc.decode(&list) != nil || list.Type != RevocationsType || list.Fleet != s.Name {
		return nil, nil
	}
	now := opts.now()
	if !stale(list.IssuedAt, list.ExpiresAt, now, opts.lifetime()) {
		return nil, nil
	}
	list.Seq++
	if err := pushRevocations(ctx, target, key, &list, now, opts.lifetime()); err != nil {
		return nil, err
	}
	return &list, nil
}
