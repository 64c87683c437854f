package host

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// Person is one person the host policy names to decide on paused runs:
// how they prove who they are (exactly one of SSHKey or Key) and what
// they may decide. Its shape is #Person in schemas/host/policy.cue.
type Person struct {
	// Name is how the person is shown beside their policy name.
	Name string `json:"name,omitempty"`
	// SSHKey is an SSH public key line ("ssh-ed25519 AAAA… comment"):
	// decisions are signed as `ssh-keygen -Y sign -n oa-decision` signs.
	SSHKey string `json:"ssh_key,omitempty"`
	// Key is a PEM public key as cosign writes it.
	Key string `json:"key,omitempty"`
	// May lists the person's rights; a decision is allowed when one allows
	// it.
	May []Right `json:"may"`
	// Clients are the public keys (SSH lines) of the keys the host holds
	// for the MCP client installations whose answers are this person's,
	// by client name.
	Clients map[string]string `json:"clients,omitempty"`

	ssh     ssh.PublicKey
	cosign  *signing.Verifier
	clients map[string]ssh.PublicKey
}

// Right is one right of a person: the decisions, narrowed to packages
// and capabilities when those are given.
type Right struct {
	Decide       []string `json:"decide"`
	Packages     []string `json:"packages,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// Decisions a person may be given in the policy (contract.Decisions,
// which this stage does not import; a test keeps them equal).
var Decisions = []string{"approve", "reject", "escalate", "skip", "teach"}

// DecisionFacts are what a decision is about, as the host knows it: the
// package and capability its rights are held to.
type DecisionFacts struct {
	Package    string
	Capability string
}

// Allows reports whether the person may make decision on what facts
// name.
func (p *Person) Allows(decision string, facts DecisionFacts) bool {
	for _, r := range p.May {
		if !slices.Contains(r.Decide, decision) {
			continue
		}
		if len(r.Packages) > 0 && !slices.Contains(r.Packages, facts.Package) {
			continue
		}
		if len(r.Capabilities) > 0 && !ir.CeilingAllows(r.Capabilities, facts.Capability) {
			continue
		}
		return true
	}
	return false
}

// Fingerprint names the person's key: its SSH fingerprint (SHA256:…) or
// its cosign key id.
func (p *Person) Fingerprint() string {
	if p.ssh != nil {
		return signing.SSHFingerprint(p.ssh)
	}
	if p.cosign != nil {
		return p.cosign.KeyID()
	}
	return ""
}

// SSHPublicKey is the person's SSH public key, or nil for a cosign key.
func (p *Person) SSHPublicKey() ssh.PublicKey { return p.ssh }

// Verifier is the person's cosign public key, or nil for an SSH key.
func (p *Person) Verifier() *signing.Verifier { return p.cosign }

// ClientKey is the public key of the host-held key that signs the answers
// given at client for this person, or nil when the policy names none.
func (p *Person) ClientKey(client string) ssh.PublicKey { return p.clients[client] }

// Person returns the person the policy names name, or nil.
func (p *Policy) Person(name string) *Person {
	if p == nil {
		return nil
	}
	if per, ok := p.Persons[name]; ok {
		return &per
	}
	return nil
}

// DecidersNamed reports whether the policy names persons who decide: then
// every decision on a run must be signed by one of them.
func (p *Policy) DecidersNamed() bool { return p != nil && len(p.Persons) > 0 }

// loadPersons parses every person's key and checks their rights, each
// refusal located at its field.
func (p *Policy) loadPersons(posOf Locator) error {
	var refused blocking.List
	bad := func(format string, path ...string) {
		field := "persons"
		for _, s := range path[1:] {
			field += "." + s
		}
		refused = append(refused, blocking.New(blocking.PolicyPersonInvalid, "%s", format).At(posOf(path...), field))
	}
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(p.Persons)) {
		per := p.Persons[name]
		switch {
		case per.SSHKey != "" && per.Key != "":
			bad("give ssh_key or key, not both", "persons", name)
		case per.SSHKey != "":
			pub, err := signing.ParseSSHPublicKey(per.SSHKey)
			if err != nil || !usableSSHKey(pub) {
				bad("ssh_key is not one usable SSH public key line (ssh-ed25519, ecdsa-sha2-nistp256/384/521, their sk- forms or RSA)", "persons", name, "ssh_key")
				continue
			}
			per.ssh = pub
		case per.Key != "":
			v, err := signing.LoadVerifier([]byte(per.Key))
			if err != nil {
				bad("key is not a PEM public key", "persons", name, "key")
				continue
			}
			per.cosign = v
		default:
			bad("give the person's public key: ssh_key or key", "persons", name)
			continue
		}
		if other, dup := seen[per.Fingerprint()]; dup {
			bad(fmt.Sprintf("the key of %s is the key of %s: each person proves who they are with their own", name, other), "persons", name)
		}
		seen[per.Fingerprint()] = name
		for i, r := range per.May {
			for j, d := range r.Decide {
				if !slices.Contains(Decisions, d) {
					bad("a decision is approve, reject, skip, teach or escalate", "persons", name, "may", strconv.Itoa(i), "decide", strconv.Itoa(j))
				}
			}
		}
		per.clients = map[string]ssh.PublicKey{}
		for _, client := range slices.Sorted(maps.Keys(per.Clients)) {
			pub, err := signing.ParseSSHPublicKey(per.Clients[client])
			if err != nil || pub.Type() != ssh.KeyAlgoED25519 {
				bad("a client installation's key is one ssh-ed25519 public key line, as oa harness install --person prints it", "persons", name, "clients", client)
				continue
			}
			per.clients[client] = pub
		}
		p.Persons[name] = per
	}
	return refused.Err()
}

// usableSSHKey reports whether pub can sign SSH signatures a person makes:
// not a certificate, not DSA.
func usableSSHKey(pub ssh.PublicKey) bool {
	switch pub.Type() {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoSKED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoRSA:
		return true
	}
	return false
}

// Rights says what the person may decide, for people: "approve, reject
// (capabilities records.*); escalate".
func (p *Person) Rights() string {
	parts := make([]string, 0, len(p.May))
	for _, r := range p.May {
		s := strings.Join(r.Decide, ", ")
		var where []string
		if len(r.Packages) > 0 {
			where = append(where, "packages "+strings.Join(r.Packages, ", "))
		}
		if len(r.Capabilities) > 0 {
			where = append(where, "capabilities "+strings.Join(r.Capabilities, ", "))
		}
		if len(where) > 0 {
			s += " (" + strings.Join(where, "; ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
