// Package admit decides, from exact bytes and the host's own trust policy,
// whether a release may be admitted on this host, and records admissions.
//
// Evaluate runs every admission check on a worker artifact: the artifact and
// its IR (package oci), a publisher signature from a trusted key inside its
// window, enough conformance attestations from trusted authorities
// independent of the publisher, and the host's own limits: protocols,
// features, evaluator authorities, pure packages and the capability
// ceiling. Any doubt means the release is not admitted.
//
// Admit writes signed admission records with a sequence number per package.
// Releases of a package are admitted side by side: each is active by its
// own latest admission, so admitting a new version never stops one a
// deployment is bound to. Admitting again a release that another release's
// admission came after is a rollback, made only when asked for with a
// reason and recorded (oa.admission/v2). StatusOf reads active, missing,
// expired, revoked, mismatched or unverifiable and never falls back to an
// older admission of the release; RequireActive
// turns anything but active into the status's own refusal. Revocations are
// written with a host-signed revocation head (also $OA_HOME/revocations.head)
// that CheckRevocations holds them to in every StatusOf. Evaluate records
// the identity that signed and runs the policy's attestation rules
// (rules.go: enforce refuses, warn records a warning). Its typed store
// (store.go) owns the admission_sequences, admissions and revocations tables;
// every record is verified with the host key on read.
package admit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/signing"
)

// Names of the admission checks, in the order they run.
const (
	CheckArtifact     = "artifact"
	CheckSignature    = "publisher_signature"
	CheckAttestations = "conformance_attestations"
	CheckProtocol     = "protocol"
	CheckFeatures     = "features"
	CheckEvaluators   = "evaluator_authorities"
	CheckComponents   = "components_pure"
	CheckCeiling      = "capability_ceiling"
	// CheckAttestationRules runs the policy's attestation rules (only when
	// it has some).
	CheckAttestationRules = "attestation_rules"
	// CheckHistory is run by Admit: the digest is not revoked, and no
	// admission of another release of the package came after its own
	// unless a rollback was asked for (with a reason), and then one did.
	CheckHistory = "not_revoked_or_rolled_back"
)

// Check is one admission check and its result.
type Check struct {
	Name    string          `json:"check"`
	Refusal *blocking.Error `json:"refusal,omitempty"`
}

// Passed reports whether the check passed.
func (c Check) Passed() bool { return c.Refusal == nil }

// Decision is the outcome of every admission check on one release.
type Decision struct {
	Checks []Check `json:"checks"`
	// Artifact is the verified artifact, when it could be read.
	Artifact *oci.Artifact `json:"-"`
	// Publisher and PublisherKeyID name the trusted key the signature
	// verified with.
	Publisher      string `json:"publisher,omitempty"`
	PublisherKeyID string `json:"publisherKeyId,omitempty"`
	// PublisherSigner is the identity the publisher's certificate named,
	// when the publisher is trusted by identity.
	PublisherSigner *signing.CertIdentity `json:"publisherSigner,omitempty"`
	// Authorities are the trusted authorities whose attestations verified,
	// by name, sorted.
	Authorities []string `json:"authorities,omitempty"`
	// AuthoritySigners are the identities the certificates of authorities
	// trusted by identity named, by authority name.
	AuthoritySigners map[string]*signing.CertIdentity `json:"authoritySigners,omitempty"`
	// Warnings are the failures of attestation rules in warn mode: the
	// rule and the failing field, never a value.
	Warnings []string `json:"warnings,omitempty"`
	Profile  string   `json:"profile"`
	// Lifetime is how long an admission made now would last.
	Lifetime time.Duration `json:"-"`
}

// Err returns the refusals of the failed checks, or nil when every check
// passed.
func (d *Decision) Err() error {
	var l blocking.List
	for _, c := range d.Checks {
		if !c.Passed() {
			l = append(l, c.Refusal)
		}
	}
	return l.Err()
}

func (d *Decision) add(name string, err error) error {
	c := Check{Name: name}
	if err != nil {
		refusals := blocking.Refusals(err)
		if refusals == nil {
			return err // a fault, not a verdict
		}
		c.Refusal = refusals[0]
	}
	d.Checks = append(d.Checks, c)
	return nil
}

// Evaluate runs every admission check of the release rel under policy and
// profile ("" for the policy's default) at time now. The returned error is
// a program fault (the registry could not be read); refusals are in the
// Decision.
func Evaluate(ctx context.Context, rel *oci.Release, policy *host.Policy, profile string, now time.Time) (*Decision, error) {
	if profile == "" {
		profile = policy.DefaultProfile
	}
	d := &Decision{Profile: profile}
	life, err := policy.Lifetime(profile)
	if err != nil {
		return nil, err
	}
	d.Lifetime = life
	// The artifact, its signature and its attestations are independent
	// reads: against a registry, doing them at once saves most of the round
	// trips waited for. Attestations are checked against every trusted
	// publisher key, so none of them can vouch for a release's conformance.
	var (
		wg               sync.WaitGroup
		art              *oci.Artifact
		fetchErr, sigErr error
		attested         []attestation
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		art, fetchErr = oci.FetchBound(ctx, rel.Target, rel.Descriptor, schemas.CheckFetchedIR)
	}()
	go func() { defer wg.Done(); _, sigErr = d.verifyPublisher(ctx, rel, policy, now) }()
	go func() { defer wg.Done(); attested = readAttestations(ctx, rel, policy) }()
	wg.Wait()
	if err := d.add(CheckArtifact, fetchErr); err != nil {
		return nil, err
	}
	d.Artifact = art
	if err := d.add(CheckSignature, sigErr); err != nil {
		return nil, err
	}
	if err := d.add(CheckAttestations, d.countAttestations(attested, rel.Descriptor, policy, now)); err != nil {
		return nil, err
	}
	if len(policy.AttestationRules) > 0 {
		if err := d.add(CheckAttestationRules, d.checkRules(ctx, rel, policy, now)); err != nil {
			return nil, err
		}
	}
	if art == nil {
		return d, nil // the host checks need the IR
	}
	w := art.Worker
	for _, c := range []struct {
		name string
		err  error
	}{
		{CheckProtocol, checkProtocol(w, policy)},
		{CheckFeatures, checkFeatures(w, policy)},
		{CheckEvaluators, checkEvaluators(w, policy)},
		{CheckComponents, checkComponents(w, policy)},
		{CheckCeiling, checkCeiling(w, policy)},
	} {
		if err := d.add(c.name, c.err); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// verifyPublisher finds the trusted publisher key the signature verifies
// with. A key outside its window does not count, and says so.
func (d *Decision) verifyPublisher(ctx context.Context, rel *oci.Release, policy *host.Policy, now time.Time) (*signing.Verifier, error) {
	var firstErr error
	for _, name := range slices.Sorted(maps.Keys(policy.Publishers)) {
		key := policy.Publishers[name]
		res, err := signing.VerifySignature(ctx, rel.Target, rel.Descriptor, key.Verifier())
		if err == nil && !key.ValidAt(now) {
			err = blocking.New(blocking.PublisherKeyOutsideWindow, "publisher %s's key is not valid now", name)
		}
		if err == nil {
			d.Publisher, d.PublisherKeyID, d.PublisherSigner = name, key.Verifier().KeyID(), res.Signer
			return key.Verifier(), nil
		}
		if firstErr == nil || worse(err, firstErr) {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = blocking.New(blocking.SignatureUntrusted, "the host policy trusts no publisher")
	}
	return nil, firstErr
}

// worse prefers the most telling refusal when no key verifies: a window
// or subject problem over "another key", over "missing".
func worse(a, b error) bool {
	rank := func(err error) int {
		l := blocking.Refusals(err)
		if l == nil {
			return 9
		}
		switch l[0].Code {
		case blocking.PublisherKeyOutsideWindow, blocking.AuthorityKeyOutsideWindow:
			return 4
		case blocking.SignatureWrongSubject, blocking.AttestationWrongSubject, blocking.LayerDigestMismatch,
			blocking.AttestationByPublisher, blocking.AttestationIRMismatch, blocking.AttestationPredicateBad,
			blocking.CertificateUntrusted, blocking.CertificateIdentityMismatch, blocking.CertificateTimeUnproven:
			return 3
		case blocking.SignatureUntrusted, blocking.AttestationUntrusted:
			return 2
		}
		return 1
	}
	return rank(a) > rank(b)
}

// attestation is one authority's attestation as read and verified.
type attestation struct {
	name string
	res  *signing.AttestationResult
	err  error
}

// readAttestations verifies each trusted authority's attestation, all at
// once, refusing any that a trusted publisher's key also signed.
func readAttestations(ctx context.Context, rel *oci.Release, policy *host.Policy) []attestation {
	var opts []signing.AttestationOption
	for _, name := range slices.Sorted(maps.Keys(policy.Publishers)) {
		opts = append(opts, signing.WithPublisher(policy.Publishers[name].Verifier()))
	}
	names := slices.Sorted(maps.Keys(policy.Authorities))
	out := make([]attestation, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := signing.VerifyAttestation(ctx, rel.Target, rel.Descriptor, policy.Authorities[name].Verifier(), signing.ConformancePredicateType, opts...)
			out[i] = attestation{name, res, err}
		}()
	}
	wg.Wait()
	return out
}

// countAttestations keeps the attestations whose authority key is inside
// its window and whose report passed for this artifact and IR, and
// requires as many as the profile demands.
func (d *Decision) countAttestations(attested []attestation, desc ocispec.Descriptor, policy *host.Policy, now time.Time) error {
	var firstErr error
	for _, a := range attested {
		err := a.err
		if err == nil && !policy.Authorities[a.name].ValidAt(now) {
			err = blocking.New(blocking.AuthorityKeyOutsideWindow, "the authority's key is not valid now")
		}
		if err == nil {
			_, err = signing.CheckReport(a.res.Predicate, desc, d.Artifact)
		}
		if err == nil {
			d.Authorities = append(d.Authorities, a.name)
			if a.res.Signer != nil {
				if d.AuthoritySigners == nil {
					d.AuthoritySigners = map[string]*signing.CertIdentity{}
				}
				d.AuthoritySigners[a.name] = a.res.Signer
			}
			continue
		}
		if firstErr == nil || worse(err, firstErr) {
			firstErr = fmt.Errorf("authority %s: %w", a.name, err)
		}
	}
	need := policy.Profiles[d.Profile].Attestations
	switch {
	case len(d.Authorities) >= need:
		return nil
	case len(d.Authorities) == 0 && firstErr != nil:
		return firstErr
	}
	return blocking.New(blocking.AttestationsInsufficient, "profile %s needs %d independent attestations, %d verified", d.Profile, need, len(d.Authorities))
}

func checkProtocol(w *ir.Worker, p *host.Policy) error {
	if !slices.Contains(p.Protocols, w.Protocol) {
		return blocking.New(blocking.ProtocolNotSpoken, "the host speaks %s", strings.Join(p.Protocols, ", "))
	}
	return nil
}

func checkFeatures(w *ir.Worker, p *host.Policy) error {
	var missing []string
	for _, f := range w.RequiredFeatures {
		if !slices.Contains(p.Features, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return blocking.New(blocking.FeatureNotOffered, "not offered: %s", strings.Join(missing, ", "))
	}
	return nil
}

func checkEvaluators(w *ir.Worker, p *host.Policy) error {
	for _, e := range w.Evaluators {
		if !slices.Contains(p.EvaluatorAuthorities, e.Authority) {
			return blocking.New(blocking.EvaluatorAuthorityUntrusted, "evaluator %s is vouched for by %s", e.Name, e.Authority)
		}
	}
	return nil
}

func checkComponents(w *ir.Worker, p *host.Policy) error {
	for _, e := range w.Evaluators {
		if err := component.CheckPure(e.Source, p.PurePackages); err != nil {
			return blocking.New(blocking.ComponentNotPure, "evaluator %s: %v", e.Name, err)
		}
	}
	return nil
}

func checkCeiling(w *ir.Worker, p *host.Policy) error {
	for _, c := range w.Capabilities {
		switch {
		case !ir.CeilingAllows(p.Ceiling.Capabilities, c.Key):
			return blocking.New(blocking.CapabilityOutsideHost, "capability %s is not under the host ceiling", c.Key)
		case c.Risk == ir.Consequential && p.Ceiling.MaxRisk != ir.Consequential:
			return blocking.New(blocking.CapabilityOutsideHost, "capability %s is consequential; the host admits read_only only", c.Key)
		}
	}
	return nil
}
