package fleet

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
)

// EnvelopeType is the type of a provisioning envelope.
const EnvelopeType = "oa.fleet.envelope/v1"

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
}

// Options say how the registry is reached.
type Options struct {
	oci.OpenOptions
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
// a host whose envelope would not change is not written at all.
func Publish(ctx context.Context, s *Spec, key *oci.Signer, opts Options) ([]Published, error) {
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	envs, err := s.envelopes(ctx, opts)
	if err != nil {
		return nil, err
	}
	// Read every current envelope before writing any.
	var refused blocking.List
	type plan struct {
		env    *Envelope
		digest string
		same   bool
	}
	plans := map[string]*plan{}
	// A new or changed envelope's sequence is the later of the old one's
	// plus one and the current Unix time: when the old envelope is gone or
	// unreadable, it still goes above anything a host may have applied.
	now := time.Now().Unix()
	for _, id := range slices.Sorted(maps.Keys(envs)) {
		env := envs[id]
		doc, err := readDocument(ctx, target, EnvelopeArtifactType, EnvelopeTag(id))
		p := &plan{env: env, same: false}
		switch {
		case err == errMalformed:
			env.Seq = now
		case err != nil:
			return nil, err
		case doc == nil:
			env.Seq = now
		default:
			var old Envelope
			if doc.verifiedBy([]*oci.Verifier{key.Verifier()}) == nil {
				refused = append(refused, blocking.New(blocking.FleetKeyMismatch, "the envelope under %s", EnvelopeTag(id)).At(s.Pos("hosts", id), "hosts."+id))
				continue
			}
			if doc.decode(&old) != nil {
				env.Seq = now
				break
			}
			env.Seq = old.Seq
			if equalJSON(env, &old) {
				p.same, p.digest = true, doc.Desc.Digest.String()
			} else {
				env.Seq = max(old.Seq+1, now)
			}
		}
		plans[id] = p
	}
	if err := refused.Err(); err != nil {
		return nil, err
	}
	var out []Published
	for _, id := range slices.Sorted(maps.Keys(s.Hosts)) {
		p, ok := plans[id]
		if !ok {
			out = append(out, Published{Host: id})
			continue
		}
		pub := Published{Host: id, Deployment: p.env.Deployment, Tag: EnvelopeTag(id), Seq: p.env.Seq, Digest: p.digest}
		if !p.same {
			payload, err := canonical.Marshal(p.env)
			if err != nil {
				return nil, err
			}
			sig, err := key.SignBytes(payload)
			if err != nil {
				return nil, err
			}
			desc, err := pushDocument(ctx, target, EnvelopeArtifactType, pub.Tag, payload, sig, key.KeyID(), nil)
			if err != nil {
				return out, err
			}
			pub.Digest, pub.Changed = desc.Digest.String(), true
		}
		out = append(out, pub)
	}
	return out, nil
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
		art, err := oci.Fetch(ctx, target, desc)
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
	out := Ceiling{Capabilities: []string{}, MaxRisk: c.MaxRisk}
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
func PublishRevocation(ctx context.Context, s *Spec, key *oci.Signer, artifactDigest digest.Digest, reason, by string, now time.Time, opts RevocationOptions) (*Revocations, bool, error) {
	if by == "" {
		return nil, false, blocking.New(blocking.AdmitterMissing, "--as is required")
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
		case doc.verifiedBy([]*oci.Verifier{key.Verifier()}) == nil:
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
	payload, err := canonical.Marshal(list)
	if err != nil {
		return nil, false, err
	}
	sig, err := key.SignBytes(payload)
	if err != nil {
		return nil, false, err
	}
	if _, err := pushDocument(ctx, target, RevocationsArtifactType, RevocationsTag, payload, sig, key.KeyID(), nil); err != nil {
		return nil, false, err
	}
	return list, true, nil
}
