package harness

import (
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

// An installation a person answers at (`oa harness install --person
// NAME`): the host holds an Ed25519 key for it (host.EnsureClientKey,
// made once per client and deployment), the server entry names the
// installation (coordinator serve --client CLIENT, checked by Inspect as
// the rest of the entry), and the record keeps the person and the key's
// public line. The operator adds that line to the person in the host
// policy (persons.NAME.clients.CLIENT); the coordinator then signs the
// answers given at the client with the key, for that person, and the
// audit names them "via client CLIENT". The person in the record is what
// install was told; who answers is what the policy says.

// Decider is who answers at an installation.
type Decider struct {
	Person string `json:"person"`
	Client string `json:"client"`
	// Key is the public key line of the key the host holds for the
	// installation; Fingerprint names it.
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint"`
	// Named is true when the host policy names the key for Person under
	// clients; until then answers at the client are signed by no one.
	Named bool `json:"named"`
	// PolicyLine is the line the operator adds to persons.PERSON.
	PolicyLine string `json:"policyLine"`
}

// decider makes (once) the key the host holds for this installation
// when it is installed for a person the host policy names, and returns
// its public key line ("" when no person is named).
func (m *MCPClient) decider(h *host.Host, deployment string) (string, error) {
	if m.opts.Person == "" {
		return "", nil
	}
	if !h.Policy.DecidersNamed() {
		return "", blocking.New(blocking.DecisionPersonUnknown, "the host policy names no persons who decide: add %s under persons first (oa policy check lists them)", m.opts.Person)
	}
	if h.Policy.Person(m.opts.Person) == nil {
		return "", blocking.New(blocking.DecisionPersonUnknown, "the host policy names no person %s", m.opts.Person)
	}
	signer, err := host.EnsureClientKey(m.opts.Home, m.opts.Client, deployment)
	if err != nil {
		return "", err
	}
	return host.ClientKeyLine(signer.PublicKey()), nil
}

// deciderOf is who answers at the installation rec records, as the host
// policy now says; nil when it was installed for no person.
func deciderOf(h *host.Host, rec *Record) *Decider {
	if rec.Person == "" {
		return nil
	}
	d := &Decider{Person: rec.Person, Client: rec.Client, Key: rec.ClientKey,
		PolicyLine: "clients: {\"" + rec.Client + "\": \"" + rec.ClientKey + "\"}"}
	pub, err := signing.ParseSSHPublicKey(rec.ClientKey)
	if err != nil {
		return d
	}
	d.Fingerprint = signing.SSHFingerprint(pub)
	if per := h.Policy.Person(rec.Person); per != nil {
		if k := per.ClientKey(rec.Client); k != nil && string(k.Marshal()) == string(pub.Marshal()) {
			d.Named = true
		}
	}
	return d
}
