package host

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// PolicyPackage is the CUE package a host policy file declares.
const PolicyPackage = "host"

// Policy is a host's trust policy, loaded and checked. Its shape is
// #Policy in schemas/host/policy.cue.
type Policy struct {
	Host                 string                `json:"host"`
	Publishers           map[string]TrustedKey `json:"publishers"`
	Authorities          map[string]TrustedKey `json:"authorities"`
	Protocols            []string              `json:"protocols"`
	Features             []string              `json:"features"`
	EvaluatorAuthorities []string              `json:"evaluator_authorities"`
	PurePackages         []string              `json:"pure_packages"`
	Ceiling              Ceiling               `json:"ceiling"`
	Profiles             map[string]Profile    `json:"profiles"`
	DefaultProfile       string                `json:"default_profile"`
	MaxLifetime          string                `json:"max_lifetime"`
	// Fleet is the fleet this host takes provisioning envelopes from; nil
	// when the policy has no fleet section (and then it is left out of the
	// policy digest, which stays what it was).
	Fleet *FleetTrust `json:"fleet,omitempty"`
	// Limits are the policy's size limits; nil when it has no limits
	// section (left out of the digest, like Fleet).
	Limits *Limits `json:"limits,omitempty"`
	// Confinement is the policy's confinement section; nil when it has
	// none (left out of the digest, like Fleet).
	Confinement *ConfinementPolicy `json:"confinement,omitempty"`
	// AttestationRules say what trusted attestations must say, by rule
	// name; nil when the policy has none (left out of the digest).
	AttestationRules map[string]AttestationRule `json:"attestation_rules,omitempty"`
	// Persons are the people who decide on paused runs, by name; nil when
	// the policy names none (left out of the digest).
	Persons map[string]Person `json:"persons,omitempty"`
	// Witnessing names the witnesses of the host's receipts log and
	// their quorum; nil when the policy has none (left out of the
	// digest).
	Witnessing *Witnessing `json:"witnessing,omitempty"`
	// Notify is how the host tells someone a run paused for a person;
	// nil when the policy has no notify section (left out of the digest).
	Notify *Notify `json:"notify,omitempty"`

	// digest is the sha256 of the policy's canonical JSON.
	digest string
}

// FleetTrust is the fleet section of a host policy: which fleet, by name
// and keys, may provision this host, and whether it may pre-approve
// bindings inside an envelope's ceiling.
type FleetTrust struct {
	Name       string                `json:"name"`
	Keys       map[string]TrustedKey `json:"keys"`
	PreApprove bool                  `json:"pre_approve"`
}

// TrustedKey is a trusted signer with its optional validity window: a
// public key (Key), or a certificate identity (Identity) with the trusted
// root of its CA.
type TrustedKey struct {
	Key       string     `json:"key,omitempty"`
	NotBefore *time.Time `json:"not_before,omitempty"`
	NotAfter  *time.Time `json:"not_after,omitempty"`
	// Identity, TrustedRoot (a path relative to the policy's folder) and
	// CertificateValidNow trust a certificate identity; empty for a key.
	Identity            *signing.Identity `json:"identity,omitempty"`
	TrustedRoot         string            `json:"trusted_root,omitempty"`
	CertificateValidNow bool              `json:"certificate_valid_now,omitempty"`
	// TrustedRootDigest is the sha256 of the trusted root file as read
	// when the policy was loaded: part of the policy digest, so a changed
	// root is a changed policy. Set by LoadPolicy, never by the file.
	TrustedRootDigest string `json:"trusted_root_digest,omitempty"`

	verifier *signing.Verifier
}

// AttestationRule is one rule on what trusted attestations of a predicate
// type must say.
type AttestationRule struct {
	PredicateType string `json:"predicate_type"`
	// Constraint is CUE the predicate must satisfy (unify with).
	Constraint string `json:"constraint"`
	// Mode is RuleEnforce or RuleWarn.
	Mode string `json:"mode"`

	compiled cue.Value
}

// Modes of an attestation rule.
const (
	RuleEnforce = "enforce"
	RuleWarn    = "warn"
)

// Compiled is the rule's constraint, compiled when the policy loaded.
func (r AttestationRule) Compiled() cue.Value { return r.compiled }

// Describe says what the signer is, for people: the key id or the
// identity, and whether a certificate valid now is accepted.
func (k TrustedKey) Describe() string {
	if k.Identity == nil {
		return k.verifier.KeyID()
	}
	d := "identity " + k.Identity.String()
	if k.CertificateValidNow {
		d += " (certificate valid now accepted)"
	}
	return d
}

// Ceiling is the most any admitted package may ask for on the host.
type Ceiling struct {
	Capabilities []string `json:"capabilities"`
	MaxRisk      ir.Risk  `json:"max_risk"`
}

// Profile is what one admission profile demands.
type Profile struct {
	Attestations int    `json:"attestations"`
	Lifetime     string `json:"lifetime"`
}

// ConfinementPolicy is the confinement section of a host policy: what it
// lets a connection's confinement profile be.
type ConfinementPolicy struct {
	// AllowUnconfined lets a connection run unconfined (--unconfined);
	// false refuses such a connection (confinement_forbidden).
	AllowUnconfined bool `json:"allow_unconfined"`
	// Minimum names the guarantees every confined connection's server
	// must hold on this host (ConfinementGuarantees); nil (left out of
	// the digest, so a section without it keeps its digest) keeps the
	// default, DefaultConfinementMinimum. An empty list asks for none.
	Minimum *[]string `json:"minimum,omitempty"`
}

// ConfinementGuarantees are the names a policy's confinement minimum may
// use, in the order a level lists them. They are connector/confine's
// Guarantees, which this stage may not import (it comes later, and
// brings the launcher into every program that loads a host); a test keeps
// the two lists equal.
var ConfinementGuarantees = []string{"filesystem", "network", "privileges", "signals", "abstract-sockets", "processes", "ipc", "socket-folders"}

// DefaultConfinementMinimum is the minimum of a policy that sets none:
// the filesystem and network guarantees of the default profile
// (connector/confine's DefaultMinimum).
var DefaultConfinementMinimum = []string{"filesystem", "network"}

// ConfinementMinimum is the guarantees every confined connection's server
// must hold on this host: the policy's confinement.minimum, or
// DefaultConfinementMinimum when it sets none.
func (p *Policy) ConfinementMinimum() []string {
	if p == nil || p.Confinement == nil || p.Confinement.Minimum == nil {
		return slices.Clone(DefaultConfinementMinimum)
	}
	return slices.Clone(*p.Confinement.Minimum)
}

// checkConfinement refuses a confinement minimum naming what is not a
// guarantee, located at the name, with the list of valid names.
func (p *Policy) checkConfinement(posOf Locator) error {
	if p.Confinement == nil || p.Confinement.Minimum == nil {
		return nil
	}
	var refused blocking.List
	for i, name := range *p.Confinement.Minimum {
		if !slices.Contains(ConfinementGuarantees, name) {
			refused = append(refused, blocking.New(blocking.PolicyInvalid, "confinement.minimum names a guarantee that does not exist; the guarantees are %s", strings.Join(ConfinementGuarantees, ", ")).At(posOf("confinement", "minimum", strconv.Itoa(i)), fmt.Sprintf("confinement.minimum[%d]", i)))
		}
	}
	return refused.Err()
}

// AllowsUnconfined reports whether the policy lets a connection run
// unconfined: yes unless its confinement section says otherwise.
func (p *Policy) AllowsUnconfined() bool {
	return p == nil || p.Confinement == nil || p.Confinement.AllowUnconfined
}

// Limits is the limits section of a host policy, in bytes; a zero field
// keeps its default (see oci.DefaultLimits).
type Limits struct {
	ManifestBytes  int64 `json:"manifest_bytes,omitempty"`
	IRBytes        int64 `json:"ir_bytes,omitempty"`
	SignatureBytes int64 `json:"signature_bytes,omitempty"`
	ComponentBytes int64 `json:"component_bytes,omitempty"`
	TotalBytes     int64 `json:"total_bytes,omitempty"`
	// EvaluationMS and EvaluationBytes bound one evaluation at run time
	// (see EvaluationBudget); unlike the others they are not about reads.
	EvaluationMS    int64 `json:"evaluation_ms,omitempty"`
	EvaluationBytes int64 `json:"evaluation_bytes,omitempty"`
	// RegistryRequestSeconds and RegistryOperationSeconds are the
	// registry deadlines (oci.Limits.RequestTimeout, OperationTimeout).
	RegistryRequestSeconds   int64 `json:"registry_request_seconds,omitempty"`
	RegistryOperationSeconds int64 `json:"registry_operation_seconds,omitempty"`
}

// ReadLimits are the limits the policy sets for reads from registries and
// layouts: its limits section over the defaults.
func (p *Policy) ReadLimits() oci.Limits {
	if p == nil || p.Limits == nil {
		return oci.DefaultLimits()
	}
	l := p.Limits
	return oci.Limits{
		ManifestBytes: l.ManifestBytes, IRBytes: l.IRBytes, SignatureBytes: l.SignatureBytes, ComponentBytes: l.ComponentBytes, TotalBytes: l.TotalBytes,
		RequestTimeout:   time.Duration(l.RegistryRequestSeconds) * time.Second,
		OperationTimeout: time.Duration(l.RegistryOperationSeconds) * time.Second,
	}.WithDefaults()
}

// EvaluationBudget is the budget of one evaluation at run time: the
// limits section's evaluation_ms and evaluation_bytes over the defaults
// (component.DefaultEvaluationTime, component.DefaultEvaluationMemory).
func (p *Policy) EvaluationBudget() component.Budget {
	var b component.Budget
	if p != nil && p.Limits != nil {
		b = component.Budget{Time: time.Duration(p.Limits.EvaluationMS) * time.Millisecond, Memory: p.Limits.EvaluationBytes}
	}
	return b.WithDefaults()
}

// Digest is the policy digest recorded in every admission: the sha256 of
// the policy's canonical JSON, so any change to what is trusted changes it.
func (p *Policy) Digest() string { return p.digest }

// Verifier returns the key's verifier.
func (k TrustedKey) Verifier() *signing.Verifier { return k.verifier }

// ValidAt reports whether t is inside the key's window.
func (k TrustedKey) ValidAt(t time.Time) bool {
	return (k.NotBefore == nil || !t.Before(*k.NotBefore)) && (k.NotAfter == nil || t.Before(*k.NotAfter))
}

// Lifetime returns how long an admission under profile lasts: the
// profile's lifetime capped by the policy's max_lifetime.
func (p *Policy) Lifetime(profile string) (time.Duration, error) {
	prof, ok := p.Profiles[profile]
	if !ok {
		return 0, blocking.New(blocking.ProfileUnknown, "the policy defines profiles %v", slices.Sorted(maps.Keys(p.Profiles)))
	}
	life, err1 := time.ParseDuration(prof.Lifetime)
	max, err2 := time.ParseDuration(p.MaxLifetime)
	if err1 != nil || err2 != nil {
		return 0, blocking.New(blocking.PolicyInvalid, "lifetimes must be Go durations such as 720h")
	}
	return min(life, max), nil
}

// LoadPolicy reads and checks the host policy at path: CUE of package
// host, unified with #Policy and concrete; every key a usable public key;
// no authority key also a publisher's; the default profile defined. A
// refusal is a blocking.List located in the file.
func LoadPolicy(path string) (*Policy, error) {
	return loadPolicy(path, OpenOptions{})
}

// loadPolicy is LoadPolicy taking the trusted roots from opts.TrustedRoots,
// by the policy's trusted_root string, when it is not nil (and then a
// witnessing policy_file's text from opts.WitnessPolicy, never a file).
func loadPolicy(path string, opts OpenOptions) (*Policy, error) {
	roots := opts.TrustedRoots
	v, posOf, err := LoadHostFile(path, schemas.PolicyDef, blocking.PolicyUnreadable, blocking.PolicyInvalid)
	if err != nil {
		return nil, err
	}
	var p Policy
	if err := v.Decode(&p); err != nil {
		return nil, fmt.Errorf("host: decoding a policy that passed the schema: %w", err)
	}
	if err := p.loadKeys(rootSource{dir: filepath.Dir(path), given: roots}, posOf); err != nil {
		return nil, err
	}
	if err := p.compileRules(posOf); err != nil {
		return nil, err
	}
	if err := p.checkConfinement(posOf); err != nil {
		return nil, err
	}
	if err := p.loadPersons(posOf); err != nil {
		return nil, err
	}
	if err := p.loadWitnessing(witnessSource{dir: filepath.Dir(path), given: roots != nil, text: opts.WitnessPolicy}, posOf); err != nil {
		return nil, err
	}
	if err := p.loadNotify(posOf); err != nil {
		return nil, err
	}
	if _, err := p.Lifetime(p.DefaultProfile); err != nil {
		return nil, err
	}
	b, err := canonical.Marshal(&p)
	if err != nil {
		return nil, err
	}
	p.digest = ir.DigestBytes(b)
	return &p, nil
}

// Locator locates a field of a loaded host file (see schemas.Locator).
type Locator = schemas.Locator

// LoadHostFile reads the host configuration file at path (CUE of package
// host), unifies it with the definition def of schemas/host and checks it
// is concrete. A file that cannot be read is refused with unreadable, one
// that does not match with invalid, located in the file.
func LoadHostFile(path, def string, unreadable, invalid blocking.Code) (cue.Value, Locator, error) {
	return schemas.LoadConfig(path, schemas.ConfigFile{Package: PolicyPackage, Schema: schemas.Host, Def: def, Unreadable: unreadable, Invalid: invalid})
}

// loadKeys parses every trusted key, reads the trusted root of every
// trusted identity (relative to dir), and refuses an authority that is a
// publisher, and a fleet key that is a publisher's or an authority's;
// posOf locates a field in the policy file.
func (p *Policy) loadKeys(dir rootSource, posOf Locator) error {
	var refused blocking.List
	load := func(group string, keys map[string]TrustedKey) map[string]string {
		ids := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(keys)) {
			k := keys[name]
			v, err := k.load(dir)
			if err != nil {
				refused = append(refused, locate(err, posOf, group, name, k))
				continue
			}
			k.verifier = v
			if tr := v.TrustedRoot(); tr != nil {
				k.TrustedRootDigest = tr.Digest()
			}
			keys[name] = k
			ids[v.KeyID()] = name
		}
		return ids
	}
	publishers := load("publishers", p.Publishers)
	authorities := load("authorities", p.Authorities)
	if p.Fleet != nil {
		for _, name := range slices.Sorted(maps.Keys(p.Fleet.Keys)) {
			k := p.Fleet.Keys[name]
			v, err := signing.LoadVerifier([]byte(k.Key))
			if err != nil {
				refused = append(refused, blocking.New(blocking.PolicyKeyInvalid, "not a PEM public key").At(posOf("fleet", "keys", name, "key"), "fleet.keys."+name+".key"))
				continue
			}
			k.verifier = v
			p.Fleet.Keys[name] = k
			// A fleet key is its own: a publisher or authority that also
			// signs envelopes could provision and pre-approve its releases.
			for _, g := range []struct {
				group string
				ids   map[string]string
			}{{"publisher", publishers}, {"authority", authorities}} {
				if other, clash := g.ids[v.KeyID()]; clash {
					refused = append(refused, blocking.New(blocking.FleetKeyReused, "fleet key %s is the key of %s %s", name, g.group, other).At(posOf("fleet", "keys", name, "key"), "fleet.keys."+name+".key"))
				}
			}
		}
	}
	for id, name := range authorities {
		if pub, clash := publishers[id]; clash {
			refused = append(refused, blocking.New(blocking.PolicyAuthorityIsPublisher, "authority %s is trusted as publisher %s is", name, pub).At(posOf("authorities", name), "authorities."+name))
		}
	}
	return refused.Err()
}

// rootSource is where a policy's trusted roots come from: the files named
// relative to dir, or else, when given is not nil, only given.
type rootSource struct {
	dir   string
	given map[string][]byte
}

// read is the trusted root the policy names name.
func (s rootSource) read(name string) (*signing.TrustedRoot, error) {
	if s.given != nil {
		raw, ok := s.given[name]
		if !ok {
			return nil, blocking.New(blocking.TrustedRootInvalid, "the trusted root the policy names was not given")
		}
		return signing.LoadTrustedRoot(raw)
	}
	return signing.ReadTrustedRoot(TrustedRootPath(s.dir, name))
}

// TrustedRootNames are the trusted_root strings of every signer the
// policy trusts by identity, sorted, each once.
func (p *Policy) TrustedRootNames() []string {
	var names []string
	for _, g := range []map[string]TrustedKey{p.Publishers, p.Authorities} {
		for _, k := range g {
			if k.Identity != nil && !slices.Contains(names, k.TrustedRoot) {
				names = append(names, k.TrustedRoot)
			}
		}
	}
	slices.Sort(names)
	return names
}

// TrustedRootPath is the file the policy of the host under home reads
// trusted root name from.
func TrustedRootPath(home, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(home, name)
}

// load is the verifier of a trusted key or identity; an identity's
// trusted root comes from roots.
func (k TrustedKey) load(roots rootSource) (*signing.Verifier, error) {
	if k.Identity == nil {
		if k.Key == "" {
			return nil, blocking.New(blocking.PolicyKeyInvalid, "neither a key nor an identity")
		}
		return signing.LoadVerifier([]byte(k.Key))
	}
	if err := k.Identity.Check(); err != nil {
		return nil, err
	}
	tr, err := roots.read(k.TrustedRoot)
	if err != nil {
		return nil, err
	}
	return signing.NewIdentityVerifier(*k.Identity, tr, signing.IdentityOptions{CertificateValidNow: k.CertificateValidNow})
}

// locate places a refusal of trusted signer name of group in the file:
// a key's at its key, an identity's at its trusted root or identity.
func locate(err error, posOf Locator, group, name string, k TrustedKey) *blocking.Error {
	at := func(e *blocking.Error, field string) *blocking.Error {
		return e.At(posOf(group, name, field), group+"."+name+"."+field)
	}
	r := blocking.Refusals(err)
	switch {
	case k.Identity == nil || r == nil:
		return at(blocking.New(blocking.PolicyKeyInvalid, "not a PEM public key"), "key")
	case r[0].Code == blocking.TrustedRootInvalid:
		return at(r[0], "trusted_root")
	}
	return at(r[0], "identity")
}

// ReleaseOptions are the options every stage of this host opens a release
// with: transport's (how the registry is reached: TLS, credentials and
// the deadlines given on a command line) with this policy's read limits.
// One place, so the host that admitted a release under its limits binds,
// serves and exports it under the same ones.
func (p *Policy) ReleaseOptions(transport oci.OpenOptions) oci.OpenOptions {
	transport.Limits = p.ReadLimits()
	return transport
}
