package host

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/signing"
)

// A signed decision is a person's decision on a paused run, signed with
// the key the host policy names for them, over a statement of what they
// decide: the host, deployment, attention item and run, the digest of
// the proposed call the item waits on, the decision, the person, and
// when. The host checks it against its policy before the decision has
// any effect (CheckDecision) and keeps it with the item; the audit checks
// it again (VerifyDecision).

// DecisionType is the type of a decision statement. A later version is a
// new type; statements of this one keep verifying.
const DecisionType = "oa.decision/v1"

// DecisionNamespace is the SSH signature namespace of a decision, as
// `ssh-keygen -Y sign -n oa-decision` takes it.
const DecisionNamespace = "oa-decision"

// Schemes a decision is signed with.
const (
	// SchemeSSH is an SSH signature (PROTOCOL.sshsig, namespace
	// DecisionNamespace), armoured as ssh-keygen writes it.
	SchemeSSH = "sshsig"
	// SchemeCosign is a cosign key's signature (base64) over the statement.
	SchemeCosign = "cosign"
)

// MaxDecisionSkew is how far ahead of the host's clock a statement's time
// may be, and how long before the item was raised.
const MaxDecisionSkew = 5 * time.Minute

// MaxStatementBytes bounds a statement read from a file.
const MaxStatementBytes = 8 << 10

// DecisionStatement is what a person signs.
type DecisionStatement struct {
	Type        string `json:"type"`
	Host        string `json:"host"`
	Deployment  string `json:"deployment"`
	AttentionID string `json:"attentionId"`
	RunID       string `json:"runId"`
	// CallDigest is the digest of the proposed call the item waits on
	// (the item's subject digest when it names no call).
	CallDigest string `json:"callDigest"`
	// Capability is the capability of the step the item waits at, which
	// the person's rights are held to.
	Capability string `json:"capability"`
	Decision   string `json:"decision"`
	// Person is the person's name in the host policy.
	Person string `json:"person"`
	// Via names the MCP client installation the person answered at; its
	// host-held key signs. Empty when the person signed themselves.
	Via string `json:"via,omitempty"`
	// Answer is, for an answer to an app's question, the digest of the
	// answer sent (its action and content): the statement holds for that
	// answer only. Decision is then approve for accept, reject for
	// decline or cancel. Empty for every other decision.
	Answer string    `json:"answer,omitempty"`
	At     time.Time `json:"at"`
}

// Message is the statement's signed bytes: its canonical JSON and a
// newline, exactly what `oa attention statement` prints.
func (s DecisionStatement) Message() ([]byte, error) {
	b, err := canonical.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseStatement reads a statement as Message wrote it (a trailing
// newline or not), refused unless it is one strict statement of
// DecisionType.
func ParseStatement(b []byte) (*DecisionStatement, error) {
	if len(b) > MaxStatementBytes {
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement is over %d bytes", MaxStatementBytes)
	}
	var s DecisionStatement
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || dec.More() || s.Type != DecisionType {
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement is not one %s statement as oa attention statement prints it", DecisionType)
	}
	return &s, nil
}

// SignedDecision is a statement with its person's signature.
type SignedDecision struct {
	Statement DecisionStatement `json:"statement"`
	// Scheme is SchemeSSH or SchemeCosign.
	Scheme string `json:"scheme"`
	// Key names the key that signed: an SSH fingerprint (SHA256:…) or a
	// cosign key id.
	Key string `json:"key"`
	// Signature is the armoured SSH signature, or the base64 cosign one.
	Signature string `json:"signature"`
}

// DecisionClaim is what a decision must say to count on an item, as the
// host knows the item.
type DecisionClaim struct {
	Host, Deployment, AttentionID, RunID, CallDigest, Decision string
	Facts                                                      DecisionFacts
	// Raised is when the item was raised; Now the host's time.
	Raised, Now time.Time
}

// CheckDecision checks sd against the policy and claim before it has any
// effect: the statement says exactly claim, at a time between the item's
// raising and the host's clock (MaxDecisionSkew either side), and
// VerifyDecision holds. It returns the person.
func (p *Policy) CheckDecision(sd *SignedDecision, claim DecisionClaim) (*Person, error) {
	if sd == nil {
		return nil, blocking.New(blocking.DecisionUnsigned, "the decision carries no signature")
	}
	s := sd.Statement
	switch {
	case s.Type != DecisionType:
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement is not a %s statement", DecisionType)
	case s.Host != claim.Host || s.Deployment != claim.Deployment:
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement names another host or deployment")
	case s.AttentionID != claim.AttentionID || s.RunID != claim.RunID:
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement names another attention item or run")
	case s.CallDigest != claim.CallDigest || s.Capability != claim.Facts.Capability:
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement names another proposed call than the item waits on")
	case s.Decision != claim.Decision:
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement decides %s, not %s", s.Decision, claim.Decision)
	case s.At.Before(claim.Raised.Add(-MaxDecisionSkew)):
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement was made before the item was raised")
	case s.At.After(claim.Now.Add(MaxDecisionSkew)):
		return nil, blocking.New(blocking.DecisionStatementMismatch, "the statement's time is ahead of this host's clock")
	}
	return p.VerifyDecision(sd, claim.Facts.Package)
}

// VerifyDecision checks that sd is signed by the key the policy names for
// its person (the person's own, or the host-held key of the client
// installation it came through), and that the person may make its
// decision on package pkg and the capability the statement names. The refusal names the person, never the
// signature.
func (p *Policy) VerifyDecision(sd *SignedDecision, pkg string) (*Person, error) {
	s := sd.Statement
	facts := DecisionFacts{Package: pkg, Capability: s.Capability}
	per := p.Person(s.Person)
	if per == nil {
		return nil, blocking.New(blocking.DecisionPersonUnknown, "the host policy names no such person")
	}
	msg, err := s.Message()
	if err != nil {
		return nil, err
	}
	bad := blocking.New(blocking.DecisionSignatureInvalid, "the signature is not one of %s's key", s.Person)
	if sd.Key != per.KeyOf(s.Via) {
		return nil, bad
	}
	switch {
	case s.Via != "":
		pub := per.ClientKey(s.Via)
		if pub == nil {
			return nil, blocking.New(blocking.DecisionSignatureInvalid, "the host policy names no installation of client %s for %s", s.Via, s.Person)
		}
		if sd.Scheme != SchemeSSH || signing.VerifySSHSignature(pub, DecisionNamespace, msg, []byte(sd.Signature)) != nil {
			return nil, bad
		}
	case per.ssh != nil:
		if sd.Scheme != SchemeSSH || signing.VerifySSHSignature(per.ssh, DecisionNamespace, msg, []byte(sd.Signature)) != nil {
			return nil, bad
		}
	default:
		sig, err := base64.StdEncoding.DecodeString(sd.Signature)
		if sd.Scheme != SchemeCosign || err != nil || per.cosign.VerifyBytes(sig, msg) != nil {
			return nil, bad
		}
	}
	if !per.Allows(s.Decision, facts) {
		return nil, blocking.New(blocking.DecisionNotPermitted, "%s may not %s on package %s, capability %s", s.Person, s.Decision, facts.Package, facts.Capability)
	}
	return per, nil
}

// KeyOf names the key that signs for the person through via ("" for the
// person's own): what SignedDecision.Key holds.
func (p *Person) KeyOf(via string) string {
	if via != "" {
		if pub := p.ClientKey(via); pub != nil {
			return signing.SSHFingerprint(pub)
		}
		return ""
	}
	return p.Fingerprint()
}

// Describe names who decided for people: "NAME (Display name) by key K",
// and "via client X" for an answer given at an MCP client.
func (sd *SignedDecision) Describe(p *Policy) string {
	s := sd.Statement
	who := s.Person
	if per := p.Person(s.Person); per != nil && per.Name != "" {
		who = fmt.Sprintf("%s (%s)", s.Person, per.Name)
	}
	who += " by key " + sd.Key
	if s.Via != "" {
		who += " via client " + s.Via
	}
	return who
}
