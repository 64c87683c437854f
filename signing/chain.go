package signing

import (
	"bytes"
	"context"
	"encoding/json"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// Links of the integrity chain, in order.
const (
	LinkArtifact    = "artifact"
	LinkIR          = "worker_ir"
	LinkSignature   = "publisher_signature"
	LinkAttestation = "conformance_attestation"
)

// Link is one checked link of the chain. Refusal is nil when it holds.
type Link struct {
	Name string `json:"link"`
	// Digest is what the link vouches for or was made with: the manifest
	// digest, the IR digest, the signing key ids.
	Digest string `json:"digest,omitempty"`
	// Form is the form a signature or attestation link held in (FormLegacy
	// or FormBundle); empty for other links and for links that fail.
	Form string `json:"form,omitempty"`
	// Signer is the identity the certificate of a signature or
	// attestation names, when it was trusted by identity.
	Signer  *CertIdentity   `json:"signer,omitempty"`
	Refusal *blocking.Error `json:"refusal,omitempty"`
}

// OK reports whether the link holds.
func (l Link) OK() bool { return l.Refusal == nil }

// Chain is the verified integrity chain of one artifact.
type Chain struct {
	Links []Link `json:"links"`
	// Artifact is the fetched artifact, when the first links held.
	Artifact *oci.Artifact `json:"-"`
	// Report is the attested conformance report, when it verified.
	Report *ConformanceReport `json:"report,omitempty"`
	// fault is the first error that is not a refusal (a registry that
	// cannot be read, say): then nothing can be said of the chain.
	fault error
}

// Err returns the refusals of the links that do not hold, or nil. A fault
// met on the way is returned instead, as it is not a verdict.
func (c *Chain) Err() error {
	if c.fault != nil {
		return c.fault
	}
	var l blocking.List
	for _, link := range c.Links {
		if !link.OK() {
			l = append(l, link.Refusal)
		}
	}
	return l.Err()
}

// VerifyChain checks every link of the chain of the release rel:
// the artifact and its blobs, the Worker IR, the publisher signature with
// publisher, and the conformance attestation with authority — an
// independent key, whose report must have passed and name this artifact's
// IR. Each link is checked even when an earlier one fails, where it can be,
// so a person sees everything that is wrong at once.
func VerifyChain(ctx context.Context, rel *oci.Release, publisher, authority *Verifier) *Chain {
	c := &Chain{}
	target, desc := rel.Target, rel.Descriptor
	art, err := oci.Fetch(ctx, target, desc, schemas.CheckFetchedIR)
	c.add(LinkArtifact, desc.Digest.String(), artifactPart(err, false))
	c.add(LinkIR, irDigest(art), artifactPart(err, true))
	c.Artifact = art

	sig, err := VerifySignature(ctx, target, desc, publisher)
	c.add(LinkSignature, publisher.KeyID(), err)
	if err == nil {
		c.Links[len(c.Links)-1].Form = sig.Form
		c.Links[len(c.Links)-1].Signer = sig.Signer
	}

	var att *AttestationResult
	err = VerifyIndependent(publisher, authority)
	if err == nil {
		att, err = VerifyAttestation(ctx, target, desc, authority, ConformancePredicateType, WithPublisher(publisher))
		if err == nil {
			c.Report, err = CheckReport(att.Predicate, desc, art)
		}
	}
	c.add(LinkAttestation, authority.KeyID(), err)
	if err == nil {
		c.Links[len(c.Links)-1].Form = att.Form
		c.Links[len(c.Links)-1].Signer = att.Signer
	}
	return c
}

// irCodes are the Fetch refusals that concern the IR rather than the
// artifact's blobs and manifest.
var irCodes = map[blocking.Code]bool{
	blocking.IRAnnotationMismatch: true, blocking.IRMalformed: true, blocking.ArtifactLayersInvalid: true,
}

// artifactPart splits a Fetch error between the artifact link and the IR
// link: each link reports the refusals that are its own.
func artifactPart(err error, irLink bool) error {
	if err == nil {
		return nil
	}
	refusals := blocking.Refusals(err)
	if refusals == nil {
		return err
	}
	if irCodes[refusals[0].Code] == irLink {
		return err
	}
	if irLink {
		return blocking.New(refusals[0].Code, "the IR cannot be checked until the artifact verifies")
	}
	return nil
}

func irDigest(a *oci.Artifact) string {
	if a == nil {
		return ""
	}
	return a.IRDigest
}

// CheckReport decodes an attested conformance report strictly and checks
// it vouches for this artifact and IR and that every check passed.
func CheckReport(predicate []byte, desc ocispec.Descriptor, art *oci.Artifact) (*ConformanceReport, error) {
	var r ConformanceReport
	dec := json.NewDecoder(bytes.NewReader(predicate))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, blocking.New(blocking.AttestationPredicateBad, "the predicate is not a conformance report")
	}
	switch {
	case r.ArtifactDigest != desc.Digest.String():
		return nil, blocking.New(blocking.AttestationWrongSubject, "the report names another artifact digest")
	case art != nil && r.WorkerIRDigest != art.IRDigest:
		return nil, blocking.New(blocking.AttestationIRMismatch, "the report's workerIrDigest is not this artifact's IR")
	case !r.Passed || len(r.Failed()) > 0 || len(r.Checks) == 0:
		return nil, blocking.New(blocking.AttestationPredicateBad, "the report does not record every check as passed")
	}
	return &r, nil
}

func (c *Chain) add(name, digest string, err error) {
	link := Link{Name: name, Digest: digest}
	if refusals := blocking.Refusals(err); refusals != nil {
		link.Refusal = refusals[0]
	} else if err != nil && c.fault == nil {
		c.fault = err
	}
	c.Links = append(c.Links, link)
}
