package attention

import (
	"context"

	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
)

// A decision on an item is signed by its person over the item's subject:
// the keyed digest of the proposed call the item waits on, or, for an
// item that names none (a question, an item made before calls were
// kept), the digest of what the item is (Subject). The host checks it
// (host.Policy.CheckDecision) before the decision has any effect; the
// item keeps it (Stored.Signed), and the audit checks it again.

// subjectType separates an item's own digest from every other digest.
const subjectType = "oa.attention-subject/v1"

// Subject is what a decision on the item signs for the call: the proposed
// call's digest, or else the digest of the item's fixed fields (its id,
// run, deployment, workflow, step, capability, kind and when it was
// raised), none of which a decision changes.
func (s *Stored) Subject() string {
	if s.CallDigest != "" {
		return s.CallDigest
	}
	b, err := canonical.Marshal(map[string]string{"type": subjectType, "id": s.ID, "run": s.RunID, "deployment": s.Deployment,
		"workflow": s.Workflow, "step": s.Step, "capability": s.Capability, "kind": s.Kind, "raised": s.CreatedAt.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return ""
	}
	return ir.DigestBytes(b)
}

// Statement is the statement person signs to make decision on the item at
// at, on host hostName (via names the client installation the answer
// came through, "" for the person's own key).
func (s *Stored) Statement(hostName, decision, person, via string, at time.Time) host.DecisionStatement {
	return host.DecisionStatement{Type: host.DecisionType, Host: hostName, Deployment: s.Deployment, AttentionID: s.ID, RunID: s.RunID,
		CallDigest: s.Subject(), Capability: s.Capability, Decision: decision, Person: person, Via: via, At: at.UTC().Truncate(time.Second)}
}

// Claim is what a decision on the item must say, as host hostName knows
// the item: its rights are held to facts; now is the host's clock.
func (s *Stored) Claim(hostName, decision string, facts host.DecisionFacts, now time.Time) host.DecisionClaim {
	return host.DecisionClaim{Host: hostName, Deployment: s.Deployment, AttentionID: s.ID, RunID: s.RunID, CallDigest: s.Subject(),
		Decision: decision, Facts: facts, Raised: s.CreatedAt, Now: now}
}

// KeepSigned records d's signed statement on the item, and its key as the
// key that decided: called in the write that records the decision.
func (s *Stored) KeepSigned(d Decision) {
	if d.Signed == nil {
		return
	}
	s.Signed = append(s.Signed, *d.Signed)
	if d.Decision != contract.DecisionTeach {
		s.DecidedKey = d.Signed.Key
	}
}

// SignedDecisionsOf returns the signed decisions on the host's items of
// one deployment ("" for all), oldest item first: for `oa receipts list`,
// `oa runs` and the audit export.
func (r Records) SignedDecisionsOf(ctx context.Context, deployment string) ([]host.SignedDecision, error) {
	items, err := r.Load(ctx, true)
	if err != nil {
		return nil, err
	}
	out := []host.SignedDecision{}
	for _, a := range items {
		if deployment == "" || a.Deployment == deployment {
			out = append(out, a.Signed...)
		}
	}
	return out, nil
}
