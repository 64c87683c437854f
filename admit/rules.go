package admit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	cuejson "cuelang.org/go/encoding/json"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// Attestation rules: the host policy says, per predicate type, what a
// trusted attestation must say, as a CUE constraint its predicate must
// satisfy. Every attestation of the type that verifies with a trusted
// publisher or authority (key or identity; the last one of each signer) is
// checked. A rule in enforce mode refuses admission naming the rule and
// the failing field, never a value; in warn mode it admits and records
// the same words as a warning.

// cueMu serializes rule evaluation: the compiled rules share the policy's
// one CUE context, which is not safe for concurrent use.
var cueMu sync.Mutex

// signedPredicate is one trusted attestation's predicate and who signed
// it (the policy's name of the publisher or authority).
type signedPredicate struct {
	signer    string
	predicate []byte
}

// checkRules runs every attestation rule; warn-mode failures go to
// d.Warnings, enforce-mode failures are the refusals returned.
func (d *Decision) checkRules(ctx context.Context, rel *oci.Release, policy *host.Policy, now time.Time) error {
	var refused blocking.List
	for _, name := range slices.Sorted(maps.Keys(policy.AttestationRules)) {
		rule := policy.AttestationRules[name]
		found, err := trustedPredicates(ctx, rel, policy, rule.PredicateType, now)
		if err != nil {
			return err
		}
		for _, r := range ruleFailures(name, rule, found) {
			if rule.Mode == host.RuleWarn {
				d.Warnings = append(d.Warnings, r.Detail)
				continue
			}
			refused = append(refused, r)
		}
	}
	return refused.Err()
}

// ruleFailures are the refusals of rule name over the predicates found:
// attestation_rule_missing when there is none, else one
// attestation_rule_failed per predicate that does not satisfy it.
func ruleFailures(name string, rule host.AttestationRule, found []signedPredicate) []*blocking.Error {
	if len(found) == 0 {
		return []*blocking.Error{blocking.New(blocking.AttestationRuleMissing, "rule %s: no trusted attestation of type %s", name, rule.PredicateType)}
	}
	var out []*blocking.Error
	for _, f := range found {
		if field, ok := Satisfies(rule.Compiled(), f.predicate); !ok {
			out = append(out, blocking.New(blocking.AttestationRuleFailed, "rule %s: field %s of the attestation by %s", name, field, f.signer))
		}
	}
	return out
}

// trustedPredicates verifies the attestations of predicateType with every
// trusted publisher and authority inside its window, and returns the
// predicates that verified. A fault (the registry cannot be read) is
// returned; refusals only mean that signer made none.
func trustedPredicates(ctx context.Context, rel *oci.Release, policy *host.Policy, predicateType string, now time.Time) ([]signedPredicate, error) {
	var out []signedPredicate
	for _, group := range []map[string]host.TrustedKey{policy.Publishers, policy.Authorities} {
		for _, name := range slices.Sorted(maps.Keys(group)) {
			k := group[name]
			if !k.ValidAt(now) {
				continue
			}
			res, err := signing.VerifyAttestation(ctx, rel.Target, rel.Descriptor, k.Verifier(), predicateType)
			if err != nil {
				if blocking.Refusals(err) == nil {
					return nil, err
				}
				continue
			}
			out = append(out, signedPredicate{name, res.Predicate})
		}
	}
	return out, nil
}

// Satisfies reports whether predicate (a JSON object) satisfies the
// compiled constraint: unified with it, nothing conflicts, everything is
// concrete, and the constraint adds no field the predicate lacks (a
// constraint `a: "x"` requires a to be there and be "x"). When it does
// not, field is the path of the first failing field ("." for the
// predicate as a whole); never a value.
func Satisfies(constraint cue.Value, predicate []byte) (field string, ok bool) {
	cueMu.Lock()
	defer cueMu.Unlock()
	expr, err := cuejson.Extract("predicate", predicate)
	if err != nil {
		return ".", false
	}
	data := cuecontext.New().BuildExpr(expr)
	if data.Err() != nil {
		return ".", false
	}
	unified := constraint.Unify(data)
	if err := unified.Validate(cue.Concrete(true)); err != nil {
		return errorPath(err), false
	}
	if p, missing := addedField(unified, data); missing {
		return p, false
	}
	return "", true
}

// errorPath is the path of the first CUE error, or ".".
func errorPath(err error) string {
	for _, e := range cueerrors.Errors(err) {
		if p := e.Path(); len(p) > 0 {
			return strings.Join(p, ".")
		}
	}
	return "."
}

// addedField finds a regular field of unified that data lacks: the
// constraint added it, so the predicate did not say it.
func addedField(unified, data cue.Value) (string, bool) {
	it, err := unified.Fields()
	if err != nil {
		return "", false
	}
	for it.Next() {
		sel := it.Selector()
		inData := data.LookupPath(cue.MakePath(sel))
		if !inData.Exists() {
			return strings.TrimPrefix(fmt.Sprint(cue.MakePath(sel)), "."), true
		}
		if it.Value().IncompleteKind() == cue.StructKind {
			if p, missing := addedField(it.Value(), inData); missing {
				return fmt.Sprint(cue.MakePath(sel)) + "." + p, true
			}
		}
	}
	return "", false
}
