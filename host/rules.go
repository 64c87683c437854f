package host

import (
	"maps"
	"slices"

	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
)

// compileRules compiles every attestation rule's constraint, which may
// import only the policy's pure packages, into one CUE context kept with
// the policy (rules are evaluated one at a time, by admit).
func (p *Policy) compileRules(posOf Locator) error {
	if len(p.AttestationRules) == 0 {
		return nil
	}
	ctx := cuecontext.New()
	var refused blocking.List
	for _, name := range slices.Sorted(maps.Keys(p.AttestationRules)) {
		r := p.AttestationRules[name]
		at := func(why string) {
			refused = append(refused, blocking.New(blocking.AttestationRuleInvalid, "rule %s: %s", name, why).At(posOf("attestation_rules", name, "constraint"), "attestation_rules."+name+".constraint"))
		}
		if err := component.CheckPure(r.Constraint, p.PurePackages); err != nil {
			at("imports a package outside pure_packages, or does not parse")
			continue
		}
		v := ctx.CompileString(r.Constraint)
		if v.Err() != nil {
			at("is not valid CUE")
			continue
		}
		r.compiled = v
		p.AttestationRules[name] = r
	}
	return refused.Err()
}
