package signing

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue/cuecontext"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/schemas"
)

// Names of the conformance checks, in the order they run.
const (
	CheckIRDigest        = "ir_digest_matches"
	CheckIRSchema        = "ir_strict_and_schema_valid"
	CheckComponentsPure  = "components_pure"
	CheckNoCustomerState = "no_customer_state"
	CheckRisksConsistent = "risks_consistent"
	CheckSkillDocs       = "skill_docs_present"
)

// Check is one conformance check and its result. Detail names what
// failed (codes and field paths), never a value.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// ConformanceReport is the predicate of a conformance attestation.
type ConformanceReport struct {
	// Authority is the conformance authority's id.
	Authority      string  `json:"authority"`
	ArtifactDigest string  `json:"artifactDigest"`
	WorkerIRDigest string  `json:"workerIrDigest"`
	Protocol       string  `json:"protocol"`
	Checks         []Check `json:"checks"`
	// Passed is true when every check passed.
	Passed bool `json:"passed"`
}

// Failed returns the names of the checks that failed.
func (r *ConformanceReport) Failed() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

// Err is nil when every check passed, else a conformance_failed refusal
// naming each failed check and why.
func (r *ConformanceReport) Err() error {
	var l blocking.List
	for _, c := range r.Checks {
		if !c.Passed {
			l = append(l, blocking.New(blocking.ConformanceFailed, "check %s: %s", c.Name, c.Detail))
		}
	}
	return l.Err()
}

// Conformance runs the conformance checks on a fetched artifact. Fetch has
// already proven every blob's digest, the IR annotation and the layer set;
// these checks re-derive the rest from the IR itself, trusting nothing the
// publisher's compiler claimed.
func Conformance(a *oci.Artifact, authority string) *ConformanceReport {
	w := a.Worker
	r := &ConformanceReport{Authority: authority, ArtifactDigest: a.Descriptor.Digest.String(), WorkerIRDigest: a.IRDigest, Protocol: w.Protocol}
	r.add(CheckIRDigest, checkIRDigest(a))
	r.add(CheckIRSchema, checkIRSchema(a))
	r.add(CheckComponentsPure, checkComponents(w))
	r.add(CheckNoCustomerState, problemsDetail(ir.ScanWorker(w)))
	r.add(CheckRisksConsistent, checkRisks(w))
	r.add(CheckSkillDocs, checkDocs(w))
	r.Passed = len(r.Failed()) == 0
	return r
}

func (r *ConformanceReport) add(name, failure string) {
	r.Checks = append(r.Checks, Check{Name: name, Passed: failure == "", Detail: failure})
}

func checkIRDigest(a *oci.Artifact) string {
	again, err := ir.Encode(a.Worker)
	switch {
	case err != nil:
		return "the IR does not re-encode"
	case ir.DigestBytes(again) != a.IRDigest:
		return "the IR re-derived from the layer has another digest"
	case a.Manifest.Annotations[oci.AnnotationIRDigest] != a.IRDigest:
		return "the manifest annotation names another digest"
	}
	return ""
}

func checkIRSchema(a *oci.Artifact) string {
	if err := schemas.CheckWorkerBytes(cuecontext.New(), a.IR); err != nil {
		return refusalsDetail(err)
	}
	return problemsDetail(ir.Validate(a.Worker))
}

// checkComponents checks every evaluator imports only pure packages and
// evaluates in the scope of each step that uses it.
func checkComponents(w *ir.Worker) string {
	ctx := cuecontext.New()
	pure, err := schemas.PurePackages(ctx)
	if err != nil {
		return "the pure allow-list is unavailable"
	}
	checker := component.NewChecker(ctx)
	var bad []string
	for _, e := range w.Evaluators {
		if err := component.CheckPure(e.Source, pure); err != nil {
			bad = append(bad, "evaluators."+e.Name+": "+err.Error())
		}
	}
	for _, u := range component.Uses(w) {
		e, ok := w.Evaluator(u.Evaluator)
		if !ok || e.Kind != u.Kind {
			continue // a dangling or mistyped reference fails the schema check
		}
		if err := checker.Check(e.Kind, e.Source, u.Scope); err != nil {
			bad = append(bad, fmt.Sprintf("evaluators.%s (jobs.%s.steps[%d]): does not evaluate", e.Name, u.Job, u.Step))
		}
	}
	return strings.Join(bad, "; ")
}

// checkRisks checks that effects and reads agree with declared risk: reads
// and checks only through read_only capabilities, consequential ones only
// in effect steps and within the ceiling, and every job's evidence read
// back by a check.
func checkRisks(w *ir.Worker) string {
	var bad []string
	for _, j := range w.Jobs {
		checks := 0
		for i, s := range j.Steps {
			c, ok := w.Capability(s.Capability)
			if s.Capability == "" || !ok {
				continue
			}
			if s.Kind != ir.StepEffect && c.Risk != ir.ReadOnly {
				bad = append(bad, fmt.Sprintf("jobs.%s.steps[%d]: %s step through a consequential capability", j.Name, i, s.Kind))
			}
			if s.Kind == ir.StepCheck {
				checks++
			}
		}
		if checks == 0 {
			bad = append(bad, "jobs."+j.Name+": no check step reads the effect back")
		}
	}
	for _, c := range w.Capabilities {
		if c.Risk == ir.Consequential && w.Ceiling.MaxRisk != ir.Consequential {
			bad = append(bad, "capabilities."+c.Key+": consequential above the ceiling")
		}
		if !ir.CeilingAllows(w.Ceiling.Capabilities, c.Key) {
			bad = append(bad, "capabilities."+c.Key+": outside the ceiling")
		}
	}
	return strings.Join(bad, "; ")
}

func checkDocs(w *ir.Worker) string {
	switch {
	case len(w.Skills) == 0:
		return "no skill docs"
	case strings.TrimSpace(w.Persona.Text) == "":
		return "no persona"
	}
	return ""
}

func problemsDetail(problems []ir.Problem) string {
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = fmt.Sprintf("%s at %s", p.Code, p.PathString())
	}
	return strings.Join(parts, "; ")
}

func refusalsDetail(err error) string {
	l := blocking.Refusals(err)
	if l == nil {
		return "the schema check failed"
	}
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = fmt.Sprintf("%s at %s", e.Code, e.Path)
	}
	return strings.Join(parts, "; ")
}
