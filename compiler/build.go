package compiler

import (
	"errors"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// PersonaDocName is the document name of the persona in the IR.
const PersonaDocName = "persona.md"

// build normalizes a bundle into IR: defaults are already filled by the
// schema; here maps become lists in key order, sets are sorted and
// deduplicated, and every evaluator becomes a component with its digest.
func (c *compilation) build(src bundleSource, skills []ir.Document) (*ir.Worker, error) {
	w := &ir.Worker{
		Protocol:         src.Protocol,
		Name:             src.Name,
		Version:          src.Version,
		Responsibility:   src.Responsibility,
		RequiredFeatures: ir.SortStrings(slices.Clone(src.Requires)),
		Persona:          document(PersonaDocName, src.Persona),
		Skills:           skills,
		Ceiling: ir.Ceiling{
			Capabilities: ir.SortStrings(slices.Clone(src.Ceiling.Capabilities)),
			MaxRisk:      ir.Risk(src.Ceiling.MaxRisk),
		},
	}
	if w.RequiredFeatures == nil {
		w.RequiredFeatures = []string{}
	}
	for _, key := range slices.Sorted(maps.Keys(src.Capabilities)) {
		cs := src.Capabilities[key]
		w.Capabilities = append(w.Capabilities, ir.Capability{Key: key, Risk: ir.Risk(cs.Risk), Approval: ir.Approval(cs.Approval), Description: cs.Description})
	}
	for _, name := range slices.Sorted(maps.Keys(src.Jobs)) {
		w.Jobs = append(w.Jobs, buildJob(name, src.Jobs[name]))
	}
	w.Evaluators = []ir.Evaluator{}
	for _, name := range slices.Sorted(maps.Keys(src.Evaluators)) {
		es := src.Evaluators[name]
		imports := ir.SortStrings(slices.Clone(es.Imports))
		if imports == nil {
			imports = []string{}
		}
		source, err := component.Source(ir.EvaluatorKind(es.Kind), imports, es.Expr)
		if err != nil {
			var ee *component.ExprError
			if !errors.As(err, &ee) {
				return nil, err
			}
			c.refuseAt(blocking.EvaluatorSyntax, bpath("evaluators", name, "expr"), "%s", schemas.RedactValues(ee.Error()))
			// Keep a placeholder so the steps naming it are not also
			// refused as naming something undeclared.
			c.broken[name] = true
			source = ""
		}
		w.Evaluators = append(w.Evaluators, ir.Evaluator{
			Name: name, Kind: ir.EvaluatorKind(es.Kind), Authority: es.Authority,
			Imports: imports, Source: source, Digest: ir.DigestBytes([]byte(source)),
		})
	}
	return w, nil
}

func buildJob(name string, js jobSource) ir.Job {
	j := ir.Job{
		Name:             name,
		Purpose:          js.Purpose,
		DoneMeans:        js.DoneMeans,
		InputSchema:      ir.InputSchema{Type: "object", Properties: map[string]ir.InputProperty{}, Required: []string{}},
		RequiredEvidence: ir.SortStrings(slices.Clone(js.Evidence)),
		OutcomeRule:      ir.OutcomeRule{MissingEvidence: js.Outcome.MissingEvidence, GuardFailed: js.Outcome.GuardFailed},
	}
	for _, in := range slices.Sorted(maps.Keys(js.Inputs)) {
		s := js.Inputs[in]
		j.InputSchema.Properties[in] = ir.InputProperty{
			Type: s.Type, Description: s.Description, Pattern: s.Pattern,
			MaxLength: s.MaxLength, Enum: s.Enum, Minimum: s.Minimum, Maximum: s.Maximum,
		}
		if !s.Optional {
			j.InputSchema.Required = append(j.InputSchema.Required, in)
		}
	}
	for _, s := range js.Steps {
		j.Steps = append(j.Steps, ir.Step{ID: s.ID, Kind: ir.StepKind(s.Kind), Capability: s.Capability, Arguments: s.Args, Predicate: s.Predicate, Evidence: s.Evidence, SkippableWhile: s.SkippableWhile, Answer: ir.StepAnswer(s.Answer)})
	}
	return j
}

// checkEvaluators checks every evaluator against the scope of each step
// that uses it, and refuses evaluators no step uses.
func (c *compilation) checkEvaluators(w *ir.Worker) {
	used := map[string]bool{}
	reported := map[string]bool{}
	for _, u := range component.Uses(w) {
		e, ok := w.Evaluator(u.Evaluator)
		if !ok {
			continue // ir.Validate reports the dangling reference
		}
		used[e.Name] = true
		if e.Kind != u.Kind || c.broken[e.Name] {
			continue // already refused: by ir.Validate, or as syntax
		}
		if code, msg := c.checkOne(e, u.Scope); code != "" && !reported[e.Name+msg] {
			reported[e.Name+msg] = true
			c.refuseAt(code, bpath("evaluators", e.Name, "expr"), "%s (as used by jobs.%s.steps[%d])", msg, u.Job, u.Step)
		}
	}
	for _, e := range w.Evaluators {
		if !used[e.Name] {
			c.refuseAt(blocking.EvaluatorUnused, bpath("evaluators", e.Name), "no step names it")
		}
	}
}

// checkOne checks that e is pure and evaluates in scope; on failure it
// returns the code and the message that say why.
func (c *compilation) checkOne(e ir.Evaluator, scope component.Scope) (blocking.Code, string) {
	if err := component.CheckPure(e.Source, c.pure); err != nil {
		return blocking.EvaluatorImportForbidden, schemas.RedactValues(err.Error())
	}
	if err := c.checker.Check(e.Kind, e.Source, scope); err != nil {
		return blocking.EvaluatorInvalid, schemas.RedactValues(err.Error())
	}
	return "", ""
}

func validDocName(name string) bool {
	if len(name) < 4 || name[len(name)-3:] != ".md" {
		return false
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (i > 0 && (r == '.' || r == '_' || r == '-'))
		if !ok {
			return false
		}
	}
	return true
}

func isUTF8(b []byte) bool { return utf8.Valid(b) }
