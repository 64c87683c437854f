// Package fleet is the plumbing of registry-backed fleet provisioning,
// shared by the fleet operator's side and the host's side.
//
// A fleet file (CUE of package fleet, #Fleet in schemas/fleet/fleet.cue)
// names one registry repository, the hosts and the deployments. Publishing
// writes one signed provisioning envelope per host to that repository,
// tagged host-<id>: the release digest, the deployment, the model and the
// ceiling the fleet pre-approves, never a secret, a connection id or
// anything host-local. A signed revocation list lives under the tag
// revocations and each host pushes its signed status under status-<id>.
// Every document is canonical JSON (RFC 8785) in the one layer of an OCI
// image-spec 1.1 artifact, its signature and key id in the layer's
// annotations, so that an unchanged fleet republishes to exactly the bytes
// already there, and nothing is written.
//
// A host provisions itself from its envelope (Provision): it verifies the
// envelope with the fleet keys of its own policy, applies the revocation
// list, copies the release with its signature and attestation into its
// local OCI layout (each blob fetched once), admits it under its own
// policy, resolves it against its own registry and connections and binds
// only where its policy lets the fleet pre-approve and the plan stays
// inside the envelope's ceiling; otherwise it stops in a named blocking
// state that `oa bind` completes.
//
// Envelopes and revocation lists carry issuedAt and expiresAt
// (Options.ExpiresIn, DefaultExpiry a week, at most MaxExpiry, which hosts
// enforce too): a host refuses expired documents, and publishing re-signs a
// document past half its lifetime with a higher sequence; sequence numbers
// never go back, and a host-signed record of the highest revocation list
// applied refuses rollback. Publish reads and writes 16 hosts at a time, and
// an unchanged host costs one manifest GET. Every document also embeds its
// payload in its layer descriptor (image-spec data), so a status is read
// with one manifest GET. After a run that leaves the host bound, a
// host-signed record of what was applied lets the next run with the same
// manifests return Unchanged without decrypting the host key or pushing,
// until StatusRefresh passes. A ceiling may name publishers, checked against
// the admission before pre-approving.
//
// Receipts logs (issue 41). Every provisioning run, unchanged ones too,
// publishes the host's receipts log checkpoint under the tag log-<id>
// (PublishLog, LogCheckpoint): the newest checkpoint its witnesses
// cosigned, with their cosignatures, else the newest; the log's public
// key; the witnesses and quorum of its policy; the consistency proof from
// the checkpoint it replaces; and when it was published, in one document
// signed with the host key like its status. A tag, not a referrer of the
// envelope: the envelope is the fleet operator's and changes digest with
// every publish, so referrers would scatter a host's checkpoints over
// envelope versions and need the referrers API (or its fallback tag) and
// a second request; a tag named by the host id is found with one manifest
// GET from the fleet file alone, as statuses are. The tag is mutable, so
// what it serves is never believed for itself: Audit (`oa fleet audit`)
// keeps, per host, the checkpoint it saw last in its own state folder and
// holds the next to it. The log key comes from the document, signed by
// the host key the fleet file pins (else the key it carries); the auditor
// keeps the first host key and log key it saw and names a change, so the
// pin in the fleet file is what makes the first sight trustworthy. The
// consistency proof published is from the checkpoint the host replaced:
// an auditor that saw that one proves the new one extends it; one that
// missed a checkpoint between has only the witnesses' cosignatures to
// vouch for growth. Tiles are not published: an auditor cannot prove
// consistency from an arbitrary older size, nor read an entry or an
// inclusion proof from the registry (proofs come from the host, `oa
// receipts prove`).
package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"cuelang.org/go/cue"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// Package is the CUE package a fleet file declares.
const Package = "fleet"

// Tags in the fleet's repository.
const (
	// RevocationsTag holds the fleet's signed revocation list.
	RevocationsTag = "revocations"
	hostTagPrefix  = "host-"
	statusPrefix   = "status-"
)

// EnvelopeTag is the tag of host id's provisioning envelope.
func EnvelopeTag(id string) string { return hostTagPrefix + id }

// StatusTag is the tag of host id's signed status.
func StatusTag(id string) string { return statusPrefix + id }

// Spec is a fleet file, loaded and checked. Its shape is #Fleet.
type Spec struct {
	Name        string                `json:"name"`
	Registry    string                `json:"registry"`
	Hosts       map[string]Host       `json:"hosts"`
	Deployments map[string]Deployment `json:"deployments"`

	// Path is the file the spec was read from.
	Path string `json:"-"`
	// repo is Registry parsed; posOf locates a field in the file.
	repo  oci.Ref
	posOf func(segs ...string) string
}

// Host is one host of the fleet.
type Host struct {
	Labels map[string]string `json:"labels"`
	// Key is the host's public key PEM, when the fleet pins it.
	Key string `json:"key,omitempty"`

	verifier *signing.Verifier
}

// Deployment is one deployment of the fleet.
type Deployment struct {
	Release  string            `json:"release"`
	Selector map[string]string `json:"selector"`
	Model    string            `json:"model"`
	Ceiling  Ceiling           `json:"ceiling"`

	ref oci.Ref
}

// Ceiling is what the fleet pre-approves: capability patterns (in a fleet
// file) or exact capability keys (in an envelope) and the highest risk.
type Ceiling struct {
	Capabilities []string `json:"capabilities"`
	MaxRisk      ir.Risk  `json:"max_risk"`
	// Publishers, when not empty, are the only publishers whose releases
	// the fleet pre-approves, by name; absent, any publisher the host's
	// policy trusts (envelopes without it keep their bytes).
	Publishers map[string]CeilingPublisher `json:"publishers,omitempty"`
}

// CeilingPublisher is a publisher a ceiling pre-approves: a public key
// (PEM), or a certificate identity with, optionally, the digest of the
// trusted root the host must have verified it with. The trusted root is
// named by digest, never carried: the host verifies signatures only with
// the roots its own policy names, and a ceiling may narrow that trust,
// never widen it.
type CeilingPublisher struct {
	Key               string            `json:"key,omitempty"`
	Identity          *signing.Identity `json:"identity,omitempty"`
	TrustedRootDigest string            `json:"trusted_root_digest,omitempty"`
}

// Admits reports whether the publisher an admission names (its key id,
// and for an identity the certificate identity that signed and the
// trusted root's digest) is this one.
func (c CeilingPublisher) Admits(keyID string, signer *signing.CertIdentity, rootDigest string) bool {
	if c.Identity == nil {
		v, err := signing.LoadVerifier([]byte(c.Key))
		return err == nil && signer == nil && v.KeyID() == keyID
	}
	return signer != nil && c.Identity.Matches(*signer) && (c.TrustedRootDigest == "" || c.TrustedRootDigest == rootDigest)
}

// Repository is the fleet's registry repository.
func (s *Spec) Repository() oci.Ref { return s.repo }

// ReleaseRef is deployment d's release reference, parsed.
func (s *Spec) ReleaseRef(d string) oci.Ref { return s.Deployments[d].ref }

// HostVerifier is the pinned key of host id, or nil.
func (s *Spec) HostVerifier(id string) *signing.Verifier { return s.Hosts[id].verifier }

// Pos locates a field of the fleet file by its path segments.
func (s *Spec) Pos(segs ...string) string {
	if s.posOf == nil {
		return s.Path
	}
	return s.posOf(segs...)
}

// Assignments maps each host id to the deployment that selects it; a host
// no deployment selects is absent.
func (s *Spec) Assignments() map[string]string {
	out := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(s.Hosts)) {
		for _, d := range slices.Sorted(maps.Keys(s.Deployments)) {
			if selects(s.Deployments[d].Selector, s.Hosts[id].Labels) {
				out[id] = d
				break
			}
		}
	}
	return out
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// LoadSpec reads and checks the fleet file at path: CUE of package fleet,
// unified with #Fleet and concrete; the registry a repository of a
// registry (not a layout), each release a registry reference pinned by
// digest, each pinned host key a public key, and no host selected by two
// deployments. A refusal is a blocking.List located in the file.
func LoadSpec(path string) (*Spec, error) {
	v, posOf, err := loadCUE(path)
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := v.Decode(&s); err != nil {
		return nil, fmt.Errorf("fleet: decoding a fleet that passed the schema: %w", err)
	}
	s.Path, s.posOf = path, posOf
	var refused blocking.List
	at := func(detail string, segs ...string) {
		refused = append(refused, blocking.New(blocking.FleetInvalid, "%s", detail).At(posOf(segs...), joinPath(segs)))
	}
	if s.repo, err = oci.ParseRef(s.Registry, oci.RefOptions{}); err != nil || s.repo.Registry == "" || s.repo.Tag != "" || s.repo.Digest != "" {
		at("the registry must be HOST/REPO without tag or digest", "registry")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Deployments)) {
		d := s.Deployments[name]
		if d.ref, err = oci.ParseRef(d.Release, oci.RefOptions{}); err != nil || d.ref.Registry == "" || d.ref.Digest == "" {
			at("the release must be REGISTRY/REPO@sha256:<64 hex>", "deployments", name, "release")
		}
		if fs := ir.ScanText(d.Model, false); len(fs) > 0 {
			at("the model name looks like customer state ("+fs[0].Rule+")", "deployments", name, "model")
		}
		for _, pub := range slices.Sorted(maps.Keys(d.Ceiling.Publishers)) {
			c := d.Ceiling.Publishers[pub]
			if c.Identity != nil {
				if err := c.Identity.Check(); err != nil {
					at("the identity needs exactly one of subject and subject_regexp, one of issuer and issuer_regexp, and RE2 regular expressions", "deployments", name, "ceiling", "publishers", pub, "identity")
				}
			} else if _, err := signing.LoadVerifier([]byte(c.Key)); err != nil {
				at("not a PEM public key", "deployments", name, "ceiling", "publishers", pub, "key")
			}
		}
		s.Deployments[name] = d
	}
	for _, id := range slices.Sorted(maps.Keys(s.Hosts)) {
		h := s.Hosts[id]
		if h.Key != "" {
			if h.verifier, err = signing.LoadVerifier([]byte(h.Key)); err != nil {
				at("not a PEM public key", "hosts", id, "key")
			}
			s.Hosts[id] = h
		}
		var by []string
		for _, d := range slices.Sorted(maps.Keys(s.Deployments)) {
			if selects(s.Deployments[d].Selector, h.Labels) {
				by = append(by, d)
			}
		}
		if len(by) > 1 {
			refused = append(refused, blocking.New(blocking.FleetHostAmbiguous, "selected by deployments %v", by).At(posOf("hosts", id), "hosts."+id))
		}
	}
	if err := refused.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

func joinPath(segs []string) string {
	out := ""
	for i, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			out += "[" + s + "]"
			continue
		}
		if i > 0 {
			out += "."
		}
		out += s
	}
	return out
}

// loadCUE reads the fleet file, unifies it with #Fleet and checks it is
// concrete, as every operator configuration file is read.
func loadCUE(path string) (cue.Value, schemas.Locator, error) {
	return schemas.LoadConfig(path, schemas.ConfigFile{Package: Package, Schema: schemas.Fleet, Def: schemas.FleetDef, Unreadable: blocking.FleetUnreadable, Invalid: blocking.FleetInvalid})
}
