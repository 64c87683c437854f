package ir

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// Problem is one way an IR breaks an invariant that the #Worker schema
// cannot state on its own: references between parts, normal order, digests
// of embedded content and the ceiling.
type Problem struct {
	Code blocking.Code
	// Path is the location as segments: field names, then for keyed lists
	// the element's name (capability key, job or evaluator name) and for
	// steps the index, e.g. ["jobs", "triage", "steps", "2", "arguments"].
	Path []string
	// Detail names the rule, never a value.
	Detail string
}

// PathString renders p.Path as jobs.triage.steps[2].arguments.
func (p Problem) PathString() string { return JoinPath(p.Path) }

// JoinPath renders path segments in the dotted form used in messages.
// Numeric segments become indices; segments with dots are quoted.
//
// A segment that is not a plain label (letters, digits and _ # . * $ -,
// at most 128 bytes) or that holds customer state is written as
// RedactedLabel: a refused key may be exactly the customer state the
// refusal is about (capabilities."bob@example.com"), so refusals locate
// it by file position and never echo it.
func JoinPath(path []string) string {
	var b strings.Builder
	for i, seg := range path {
		if !plainLabel(seg) {
			seg = RedactedLabel
		}
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			fmt.Fprintf(&b, "[%s]", seg)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		if strings.ContainsAny(seg, ".*") {
			b.WriteString(strconv.Quote(seg))
		} else {
			b.WriteString(seg)
		}
	}
	return b.String()
}

// RedactedLabel stands in a path for a label JoinPath does not show.
const RedactedLabel = "<label>"

// plainLabel reports whether a path segment may be shown as written.
func plainLabel(seg string) bool {
	if seg == "" || len(seg) > 128 {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_#.*$-", c) >= 0) {
			return false
		}
	}
	return len(scanText(seg, false)) == 0
}

// Err converts problems to a refusal list located by path only.
func Err(problems []Problem) error {
	var l blocking.List
	for _, p := range problems {
		l = append(l, blocking.New(p.Code, "%s", p.Detail).At("", p.PathString()))
	}
	return l.Err()
}

// Validate checks w's invariants: the protocol; names unique and lists in
// normal order; every step's capability, evaluators and evidence declared
// and of the right kind and risk; required evidence produced by a check;
// embedded digests matching their content; every capability inside the
// ceiling; every served capability's MCP tool name usable and its own. It returns every problem found, in a stable order.
func Validate(w *Worker) []Problem {
	v := validator{w: w}
	if w.Protocol != Protocol {
		v.add(blocking.ProtocolUnsupported, []string{"protocol"}, "protocol is not %s", Protocol)
	}
	v.sorted("requiredFeatures", len(w.RequiredFeatures), func(i int) string { return w.RequiredFeatures[i] })
	v.sorted("capabilities", len(w.Capabilities), func(i int) string { return w.Capabilities[i].Key })
	v.sorted("jobs", len(w.Jobs), func(i int) string { return w.Jobs[i].Name })
	v.sorted("evaluators", len(w.Evaluators), func(i int) string { return w.Evaluators[i].Name })
	v.sorted("skills", len(w.Skills), func(i int) string { return w.Skills[i].Name })
	v.sorted("ceiling.capabilities", len(w.Ceiling.Capabilities), func(i int) string { return w.Ceiling.Capabilities[i] })
	for _, c := range w.Capabilities {
		v.capability(c)
	}
	v.problems = append(v.problems, CheckToolNames(servedKeys(w))...)
	for _, j := range w.Jobs {
		v.job(j)
	}
	for _, e := range w.Evaluators {
		v.sorted("evaluators."+e.Name+".imports", len(e.Imports), func(i int) string { return e.Imports[i] })
		if DigestBytes([]byte(e.Source)) != e.Digest {
			v.add(blocking.IRDigestMismatch, []string{"evaluators", e.Name, "digest"}, "digest is not the sha256 of source")
		}
	}
	v.document(w.Persona, []string{"persona"})
	for _, d := range w.Skills {
		v.document(d, []string{"skills", d.Name})
	}
	return v.problems
}

type validator struct {
	w        *Worker
	problems []Problem
}

// add records a problem at path; format and args name the rule.
func (v *validator) add(code blocking.Code, path []string, format string, args ...any) {
	v.problems = append(v.problems, Problem{Code: code, Path: path, Detail: fmt.Sprintf(format, args...)})
}

// at returns base with more segments appended, never sharing base's array.
func at(base []string, more ...string) []string {
	return append(append(make([]string, 0, len(base)+len(more)), base...), more...)
}

// sorted checks that the n names given by name are strictly increasing,
// which means sorted and without duplicates.
func (v *validator) sorted(field string, n int, name func(int) string) {
	path := strings.Split(field, ".")
	for i := 1; i < n; i++ {
		switch prev, cur := name(i-1), name(i); {
		case prev == cur:
			v.add(blocking.DuplicateName, at(path, strconv.Itoa(i)), "name appears twice")
		case prev > cur:
			v.add(blocking.IRNotNormalized, at(path, strconv.Itoa(i)), "list is not in sorted order")
		}
	}
}

func (v *validator) capability(c Capability) {
	if !CeilingAllows(v.w.Ceiling.Capabilities, c.Key) {
		v.add(blocking.CapabilityOutsideCeiling, []string{"capabilities", c.Key}, "no ceiling.capabilities entry covers this key")
	}
	if v.w.Ceiling.MaxRisk == ReadOnly && c.Risk == Consequential {
		v.add(blocking.CapabilityOutsideCeiling, []string{"capabilities", c.Key, "risk"}, "risk consequential is above the ceiling's max_risk read_only")
	}
}

func (v *validator) job(j Job) {
	seenStep := map[string]bool{}
	produced := map[string]bool{}
	for i, s := range j.Steps {
		here := []string{"jobs", j.Name, "steps", strconv.Itoa(i)}
		if seenStep[s.ID] {
			v.add(blocking.DuplicateName, at(here, "id"), "step id used by an earlier step")
		}
		seenStep[s.ID] = true
		v.step(s, here)
		v.skippable(j, i, s, here)
		if s.Kind == StepCheck {
			if produced[s.Evidence] {
				v.add(blocking.DuplicateName, at(here, "evidence"), "evidence produced by an earlier check")
			}
			produced[s.Evidence] = true
		}
	}
	for i, e := range j.RequiredEvidence {
		if !produced[e] {
			v.add(blocking.ReferenceUnknown, []string{"jobs", j.Name, "evidence", strconv.Itoa(i)}, "no check step produces this evidence")
		}
	}
	v.sorted("jobs."+j.Name+".evidence", len(j.RequiredEvidence), func(i int) string { return j.RequiredEvidence[i] })
	v.sorted("jobs."+j.Name+".inputSchema.required", len(j.InputSchema.Required), func(i int) string { return j.InputSchema.Required[i] })
	for _, r := range j.InputSchema.Required {
		if _, ok := j.InputSchema.Properties[r]; !ok {
			v.add(blocking.ReferenceUnknown, []string{"jobs", j.Name, "inputSchema", "required"}, "required input is not a declared property")
		}
	}
}

// step checks one step's references: the fields its kind needs are set,
// the others are not, and each names something declared and fitting.
func (v *validator) step(s Step, here []string) {
	needsCall := s.Kind == StepRead || s.Kind == StepEffect || s.Kind == StepCheck
	needsPredicate := s.Kind == StepGuard || s.Kind == StepCheck
	needsEvidence := s.Kind == StepCheck
	v.presence(needsCall, s.Capability, "capability", here)
	v.presence(needsCall, s.Arguments, "arguments", here)
	v.presence(needsPredicate, s.Predicate, "predicate", here)
	v.presence(needsEvidence, s.Evidence, "evidence", here)
	switch {
	case s.Answer == "":
	case s.Answer != AnswerText:
		v.add(blocking.ReferenceUnknown, at(here, "answer"), "answer is not text")
	case s.Kind != StepRead && s.Kind != StepCheck:
		v.add(blocking.ReferenceUnknown, at(here, "answer"), "this kind of step takes no answer")
	}
	if s.Capability != "" {
		c, ok := v.w.Capability(s.Capability)
		switch {
		case !ok:
			v.add(blocking.ReferenceUnknown, at(here, "capability"), "capability is not declared in capabilities")
		case s.Kind != StepEffect && c.Risk != ReadOnly:
			v.add(blocking.StepRiskMismatch, at(here, "capability"), "a %s step must use a read_only capability", s.Kind)
		}
	}
	v.evaluatorRef(s.Arguments, EvaluatorArguments, at(here, "arguments"))
	v.evaluatorRef(s.Predicate, EvaluatorPredicate, at(here, "predicate"))
}

// skippable checks a step's skippable_while: never on a guard or a
// consequential effect, and naming a guard step that comes earlier in the
// same job (so the guard has been evaluated, in the same attempt, every
// time the run reaches the step).
func (v *validator) skippable(j Job, i int, s Step, here []string) {
	if s.SkippableWhile == "" {
		return
	}
	path := at(here, "skippableWhile")
	if s.Kind == StepGuard {
		v.add(blocking.StepSkipConsequential, path, "a guard step is never skippable")
		return
	}
	if c, ok := v.w.Capability(s.Capability); ok && s.Kind == StepEffect && c.Risk != ReadOnly {
		v.add(blocking.StepSkipConsequential, path, "an effect through a consequential capability is never skippable")
		return
	}
	if !slices.ContainsFunc(j.Steps[:i], func(g Step) bool { return g.Kind == StepGuard && g.ID == s.SkippableWhile }) {
		v.add(blocking.StepSkipGuardUnknown, path, "names no guard step earlier in this job")
	}
}

func (v *validator) presence(needed bool, value, field string, here []string) {
	switch {
	case needed && value == "":
		v.add(blocking.ReferenceUnknown, at(here, field), "this kind of step needs %s", field)
	case !needed && value != "":
		v.add(blocking.ReferenceUnknown, at(here, field), "this kind of step takes no %s", field)
	}
}

func (v *validator) evaluatorRef(name string, want EvaluatorKind, path []string) {
	if name == "" {
		return
	}
	e, ok := v.w.Evaluator(name)
	switch {
	case !ok:
		v.add(blocking.ReferenceUnknown, path, "evaluator is not declared in evaluators")
	case e.Kind != want:
		v.add(blocking.EvaluatorKindMismatch, path, "names an evaluator of kind %s where %s is needed", e.Kind, want)
	}
}

func (v *validator) document(d Document, path []string) {
	if DigestBytes([]byte(d.Text)) != d.Digest {
		v.add(blocking.IRDigestMismatch, at(path, "digest"), "digest is not the sha256 of text")
	}
}

// CeilingAllows reports whether key is covered by one of the ceiling's
// patterns: an exact key, or a prefix ending in ".*" that matches keys with
// at least one more segment.
func CeilingAllows(patterns []string, key string) bool {
	for _, p := range patterns {
		if p == key {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(key, prefix) && len(key) > len(prefix) {
			return true
		}
	}
	return false
}

// SortStrings sorts s and removes duplicates, in place; it returns s.
func SortStrings(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
