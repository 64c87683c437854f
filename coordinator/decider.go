package coordinator

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/coordinator/attention"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/signing"
)

// Who decides. On a host whose policy names persons (host.Policy.Persons)
// every decision on a paused run is a statement signed by its person
// (host.SignedDecision) and is held to the policy here, before anything
// is written: an unknown person, a signature that is not their key's, a
// decision they may not make on the item's package or capability, or a
// statement about anything else is a named refusal that changes nothing.
// The item keeps the signed statement (attention.Stored.Signed), in the
// same write as the decision. An answer given at an MCP client is signed
// by the key the host holds for that client installation (Installation),
// for the person the policy names for it. On a host whose policy names no
// persons a decision carries a free-text name, recorded unverified, as
// before.

// Installation is the MCP client installation a coordinator serves: the
// client, the person the host policy names for it (persons.NAME.clients)
// and the key the host holds for it, which signs the answers a person
// gives at that client.
type Installation struct {
	Client string
	Person string
	Signer ssh.Signer
}

// installationFor is the installation a coordinator serving opts.Client
// serves: the key the host holds for the client's installation of the
// deployment (made by `oa harness install --person`) and the person the
// host policy names with it. When no key was made, or the policy names
// no one with it, there is none: the operator is told, and an answer
// given at the client is refused (decision_unsigned) on a host whose
// policy names persons.
func installationFor(h *host.Host, opts Options) (*Installation, error) {
	signer, err := host.LoadClientKey(opts.Home, opts.Client, opts.Deployment)
	if err != nil {
		return nil, err
	}
	if signer == nil {
		fmt.Fprintf(opts.Operator, "oa coordinator: client installation %s: this host holds no key for it (oa harness install --person NAME makes one); answers given at the client are signed by no one\n", opts.Client)
		return nil, nil
	}
	person, err := h.Policy.ClientPerson(opts.Client, signer.PublicKey())
	if err != nil {
		return nil, err
	}
	if person == "" {
		fmt.Fprintf(opts.Operator, "oa coordinator: client installation %s: the host policy names no person with its key (%s); answers given at the client are signed by no one: add the clients line oa harness install --person printed\n", opts.Client, signing.SSHFingerprint(signer.PublicKey()))
		return nil, nil
	}
	return &Installation{Client: opts.Client, Person: person, Signer: signer}, nil
}

// signFor signs decision d as the installation's person, when the host
// policy names persons and d carries no signature of its own.
func (dk *desk) signFor(ctx context.Context, d *attention.Decision) error {
	inst := dk.opts.Installation
	if d.Signed != nil || !dk.host.Policy.DecidersNamed() || inst == nil {
		return nil
	}
	item, err := AttentionRecords(dk.host).LoadOne(ctx, d.AttentionID)
	if err != nil {
		return err
	}
	signed, err := SignDecision(item.Statement(dk.host.Policy.Host, d.Decision, inst.Person, inst.Client, dk.now()), inst.Signer)
	if err != nil {
		return err
	}
	d.Signed = signed
	return nil
}

// SignDecision signs statement s with an SSH key (a person's own, read
// from a file or held by an ssh-agent, or a client installation's).
func SignDecision(s host.DecisionStatement, signer ssh.Signer) (*host.SignedDecision, error) {
	msg, err := s.Message()
	if err != nil {
		return nil, err
	}
	sig, err := signing.SignSSH(signer, host.DecisionNamespace, msg)
	if err != nil {
		return nil, err
	}
	return &host.SignedDecision{Statement: s, Scheme: host.SchemeSSH, Key: signing.SSHFingerprint(signer.PublicKey()), Signature: string(sig)}, nil
}

// holdToPolicy checks decision d against the host policy's persons
// before it has any effect (see above), and names its person as the one
// who decided.
func holdToPolicy(ctx context.Context, h *host.Host, d *attention.Decision, now time.Time) error {
	if !h.Policy.DecidersNamed() {
		if d.Signed != nil {
			return blocking.New(blocking.DecisionPersonUnknown, "the host policy names no persons who decide")
		}
		return nil
	}
	item, err := AttentionRecords(h).LoadOne(ctx, d.AttentionID)
	if err != nil {
		return err
	}
	facts, err := decisionFacts(ctx, h, item)
	if err != nil {
		return err
	}
	if _, err := h.Policy.CheckDecision(d.Signed, item.Claim(h.Policy.Host, d.Decision, facts, now)); err != nil {
		return err
	}
	d.By = d.Signed.Statement.Person
	return nil
}

// decisionFacts are what a person's rights on item are held to: the
// package its deployment's binding runs and the item's capability.
func decisionFacts(ctx context.Context, h *host.Host, item *attention.Stored) (host.DecisionFacts, error) {
	b, err := bind.Current(ctx, h, item.Deployment)
	if err != nil {
		return host.DecisionFacts{}, err
	}
	return host.DecisionFacts{Package: b.Plan.Package, Capability: item.Capability}, nil
}

// holdAnswer holds a person's answer a to the app's question id to the
// host policy, as holdToPolicy holds a decision, before the app gets it:
// on a host whose policy names persons the answer is signed — by its
// person (signed), or, given at the client (atClient), with the
// installation's key — over a statement naming the item, the decision it
// amounts to and the answer's digest. It returns the signed statement
// and who answered.
func (dk *desk) holdAnswer(ctx context.Context, id string, a attention.Answer, by string, signed *host.SignedDecision, atClient bool) (*host.SignedDecision, string, error) {
	h := dk.host
	if !h.Policy.DecidersNamed() {
		if signed != nil {
			return nil, "", blocking.New(blocking.DecisionPersonUnknown, "the host policy names no persons who decide")
		}
		return nil, by, nil
	}
	decision := attention.AnswerDecision(a.Action)
	item, err := AttentionRecords(h).LoadOne(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if inst := dk.opts.Installation; signed == nil && atClient && inst != nil {
		stmt := item.Statement(h.Policy.Host, decision, inst.Person, inst.Client, dk.now())
		stmt.Answer = attention.AnswerDigest(a)
		if signed, err = SignDecision(stmt, inst.Signer); err != nil {
			return nil, "", err
		}
	}
	if signed != nil && signed.Statement.Answer != attention.AnswerDigest(a) {
		return nil, "", blocking.New(blocking.DecisionStatementMismatch, "the statement signs another answer than the one sent")
	}
	facts, err := decisionFacts(ctx, h, item)
	if err != nil {
		return nil, "", err
	}
	if _, err := h.Policy.CheckDecision(signed, item.Claim(h.Policy.Host, decision, facts, dk.now())); err != nil {
		return nil, "", err
	}
	return signed, signed.Statement.Person, nil
}

// AnswerStatement is the statement person signs to answer the host's
// question id with a (`oa attention answer --person`).
func AnswerStatement(ctx context.Context, h *host.Host, id string, a attention.Answer, person string, now time.Time) (*host.DecisionStatement, error) {
	s, err := StatementFor(ctx, h, id, attention.AnswerDecision(a.Action), person, now)
	if err != nil {
		return nil, err
	}
	s.Answer = attention.AnswerDigest(a)
	return s, nil
}

// StatementFor is the statement person signs to make decision on the
// host's attention item id now (`oa attention statement`).
func StatementFor(ctx context.Context, h *host.Host, id, decision, person string, now time.Time) (*host.DecisionStatement, error) {
	item, err := AttentionRecords(h).LoadOne(ctx, id)
	if err != nil {
		return nil, err
	}
	s := item.Statement(h.Policy.Host, decision, person, "", now)
	return &s, nil
}
