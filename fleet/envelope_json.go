package fleet

import (
	"encoding/json"

	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// EnvelopeTypeV1 is the type of an envelope published before
// oa.fleet.envelope/v2: its ceiling spelled in the fleet file's snake_case
// (max_risk, trusted_root_digest, issuer_regexp, subject_regexp) inside an
// otherwise camelCase record. A host still reads and verifies it, byte for
// byte as it was signed; publishing never writes it again.
const EnvelopeTypeV1 = "oa.fleet.envelope/v1"

// knownEnvelopeType reports whether t is a version of the envelope a host
// reads.
func knownEnvelopeType(t string) bool { return t == EnvelopeType || t == EnvelopeTypeV1 }

// envelopeFields is Envelope without its JSON methods. Encoded as it is,
// it is the v1 layout: the ceiling is the fleet file's Ceiling with the
// file's snake_case names.
type envelopeFields Envelope

// envelopeV2 is the v2 layout: every field of envelopeFields, the ceiling
// replaced by its camelCase form (the shallower field wins in
// encoding/json).
type envelopeV2 struct {
	*envelopeFields
	Ceiling envelopeCeiling `json:"ceiling"`
}

// envelopeCeiling is a Ceiling as an oa.fleet.envelope/v2 spells it.
type envelopeCeiling struct {
	Capabilities []string                     `json:"capabilities"`
	MaxRisk      ir.Risk                      `json:"maxRisk"`
	Publishers   map[string]envelopePublisher `json:"publishers,omitempty"`
}

// envelopePublisher is a CeilingPublisher as an oa.fleet.envelope/v2
// spells it.
type envelopePublisher struct {
	Key               string            `json:"key,omitempty"`
	Identity          *envelopeIdentity `json:"identity,omitempty"`
	TrustedRootDigest string            `json:"trustedRootDigest,omitempty"`
}

// envelopeIdentity is a signing.Identity as an oa.fleet.envelope/v2 spells
// it: the same fields in the same order, so each converts to the other.
type envelopeIdentity struct {
	Issuer        string `json:"issuer,omitempty"`
	IssuerRegexp  string `json:"issuerRegexp,omitempty"`
	Subject       string `json:"subject,omitempty"`
	SubjectRegexp string `json:"subjectRegexp,omitempty"`
}

// MarshalJSON encodes the envelope in the layout of its Type: v1 as it was
// signed then, anything else as v2. Publishing sets EnvelopeType, so only
// v2 is written; an envelope read as v1 encodes to its own signed bytes
// again, which is how a host checks it is canonical.
func (e Envelope) MarshalJSON() ([]byte, error) {
	f := envelopeFields(e)
	if e.Type == EnvelopeTypeV1 {
		return canonical.Marshal(&f)
	}
	return canonical.Marshal(envelopeV2{&f, camelCeiling(e.Ceiling)})
}

// UnmarshalJSON decodes an envelope strictly (no unknown field) in the
// layout its type names: v1's snake_case ceiling, or v2's camelCase one.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	f := (*envelopeFields)(e)
	if head.Type == EnvelopeTypeV1 {
		return canonical.DecodeStrict(b, f)
	}
	v2 := envelopeV2{envelopeFields: f}
	if err := canonical.DecodeStrict(b, &v2); err != nil {
		return err
	}
	e.Ceiling = v2.Ceiling.ceiling()
	return nil
}

// camelCeiling is c as a v2 envelope spells it.
func camelCeiling(c Ceiling) envelopeCeiling {
	out := envelopeCeiling{Capabilities: c.Capabilities, MaxRisk: c.MaxRisk}
	if c.Publishers != nil {
		out.Publishers = make(map[string]envelopePublisher, len(c.Publishers))
	}
	for name, p := range c.Publishers {
		ep := envelopePublisher{Key: p.Key, TrustedRootDigest: p.TrustedRootDigest}
		if p.Identity != nil {
			id := envelopeIdentity(*p.Identity)
			ep.Identity = &id
		}
		out.Publishers[name] = ep
	}
	return out
}

// ceiling is c as the fleet's Ceiling.
func (c envelopeCeiling) ceiling() Ceiling {
	out := Ceiling{Capabilities: c.Capabilities, MaxRisk: c.MaxRisk}
	if c.Publishers != nil {
		out.Publishers = make(map[string]CeilingPublisher, len(c.Publishers))
	}
	for name, p := range c.Publishers {
		cp := CeilingPublisher{Key: p.Key, TrustedRootDigest: p.TrustedRootDigest}
		if p.Identity != nil {
			id := signing.Identity(*p.Identity)
			cp.Identity = &id
		}
		out.Publishers[name] = cp
	}
	return out
}
