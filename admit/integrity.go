package admit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// Link is one link of a release's integrity chain on this host.
type Link struct {
	Name    string          `json:"link"`
	Detail  string          `json:"detail,omitempty"`
	Refusal *blocking.Error `json:"refusal,omitempty"`
	// CertificateValidNow says a signer of this link is trusted by
	// identity with the policy's explicit "certificate valid now" choice
	// (a certificate valid now accepted without a proven signing time).
	CertificateValidNow bool `json:"certificateValidNow,omitempty"`
}

// Integrity is the chain artifact → IR → publisher signature →
// conformance attestations → admission, each link with its state.
type Integrity struct {
	Links  []Link  `json:"links"`
	Status *Status `json:"status"`
	// Warnings are the failures of attestation rules in warn mode.
	Warnings []string `json:"warnings,omitempty"`
}

// IntegrityOf checks rel's chain under the host policy at now and reports
// every link. It writes nothing.
func IntegrityOf(ctx context.Context, h *host.Host, rel *oci.Release, now time.Time) (*Integrity, error) {
	desc := rel.Descriptor
	d, err := Evaluate(ctx, rel, h.Policy, "", now)
	if err != nil {
		return nil, err
	}
	in := &Integrity{}
	byName := map[string]*blocking.Error{}
	for _, c := range d.Checks {
		byName[c.Name] = c.Refusal
	}
	irDigest := ""
	if d.Artifact != nil {
		irDigest = d.Artifact.IRDigest
	}
	in.Links = append(in.Links,
		Link{Name: "artifact", Detail: desc.Digest.String(), Refusal: byName[CheckArtifact]},
		Link{Name: "worker_ir", Detail: irDigest, Refusal: byName[CheckArtifact]},
		Link{Name: "publisher_signature", Detail: signerDetail(d.Publisher, d.PublisherSigner, h.Policy.Publishers), Refusal: byName[CheckSignature],
			CertificateValidNow: d.Publisher != "" && h.Policy.Publishers[d.Publisher].CertificateValidNow},
		Link{Name: "conformance_attestations", Detail: authoritiesDetail(d, h.Policy), Refusal: byName[CheckAttestations],
			CertificateValidNow: slices.ContainsFunc(d.Authorities, func(a string) bool { return h.Policy.Authorities[a].CertificateValidNow })},
	)
	if n := len(h.Policy.AttestationRules); n > 0 {
		in.Links = append(in.Links, Link{Name: "attestation_rules", Detail: fmt.Sprintf("%d rule(s), %d warning(s)", n, len(d.Warnings)), Refusal: byName[CheckAttestationRules]})
		in.Warnings = d.Warnings
	}
	st, err := StatusOf(ctx, h, desc.Digest.String(), now)
	if err != nil {
		return nil, err
	}
	in.Status = st
	in.Links = append(in.Links, Link{Name: "admission", Detail: string(st.State), Refusal: st.Why})
	return in, nil
}

// Err returns the refusals of the links that do not hold.
func (in *Integrity) Err() error {
	var l blocking.List
	for _, link := range in.Links {
		if link.Refusal != nil {
			l = append(l, link.Refusal)
		}
	}
	return l.Err()
}

// signerDetail names a trusted signer for the chain: its policy name, the
// identity its certificate named when it is trusted by identity, and that
// the policy accepts its certificate as valid now when it does (an
// explicit choice a person should see).
func signerDetail(name string, signer *signing.CertIdentity, trusted map[string]host.TrustedKey) string {
	if name == "" {
		return ""
	}
	d := name
	if signer != nil {
		d += " (" + signer.String() + ")"
	}
	if trusted[name].CertificateValidNow {
		d += " [certificate valid now accepted]"
	}
	return d
}

// authoritiesDetail names the authorities whose attestations verified.
func authoritiesDetail(d *Decision, p *host.Policy) string {
	names := make([]string, len(d.Authorities))
	for i, a := range d.Authorities {
		names[i] = signerDetail(a, d.AuthoritySigners[a], p.Authorities)
	}
	return strings.Join(names, ", ")
}
