// Package ir defines canonical Worker IR: the Go types, strict decoding,
// RFC 8785 canonical encoding and the workerIrDigest.
//
// Worker IR is the portable contract of a worker package. It carries method
// and limits only (capabilities, jobs, pure evaluators, persona and skill
// text, a policy ceiling) and never anything host- or customer-specific.
// Its shape is defined by #Worker in schemas/ir.cue; these types mirror it
// for Go callers.
//
// Validate checks references, order, embedded digests, the ceiling, served
// tool names and a step's skippableWhile (never a guard or consequential
// effect). CheckToolNames (also run by resolve.Resolve) refuses names too
// long for contract.ValidToolName or clashing with contract.CoordinatorTools.
// ScanText, ScanName and ScanWorker are the customer-state rules.
package ir

// Protocol is the worker protocol this version of oa speaks.
const Protocol = "oa.worker/v1"

// MediaType is the OCI media type of a Worker IR layer.
const MediaType = "application/vnd.oa.worker.ir.v1+json"

// DocumentMediaType is the media type of persona and skill documents.
const DocumentMediaType = "text/markdown"

// Risk is the effect risk of a capability.
type Risk string

// Risks.
const (
	ReadOnly      Risk = "read_only"
	Consequential Risk = "consequential"
)

// Approval says whether a person must approve each use of a capability.
type Approval string

// Approvals.
const (
	ApprovalNotRequired Approval = "not_required"
	ApprovalRequired    Approval = "required"
)

// StepKind is what a step does.
type StepKind string

// Step kinds.
const (
	// StepRead calls a read-only capability; later steps see its result.
	StepRead StepKind = "read"
	// StepGuard evaluates a predicate; false stops the job before any
	// further effect.
	StepGuard StepKind = "guard"
	// StepEffect calls a capability with computed arguments.
	StepEffect StepKind = "effect"
	// StepCheck reads back through a read-only capability and evaluates a
	// predicate over the result; its value is the step's evidence.
	StepCheck StepKind = "check"
)

// EvaluatorKind is what an evaluator yields.
type EvaluatorKind string

// Evaluator kinds.
const (
	// EvaluatorArguments yields the argument struct of a call.
	EvaluatorArguments EvaluatorKind = "arguments"
	// EvaluatorPredicate yields a bool.
	EvaluatorPredicate EvaluatorKind = "predicate"
)

// Worker is one compiled worker package.
type Worker struct {
	Protocol         string       `json:"protocol"`
	Name             string       `json:"name"`
	Version          string       `json:"version"`
	Responsibility   string       `json:"responsibility"`
	RequiredFeatures []string     `json:"requiredFeatures"`
	Capabilities     []Capability `json:"capabilities"`
	Jobs             []Job        `json:"jobs"`
	Evaluators       []Evaluator  `json:"evaluators"`
	Persona          Document     `json:"persona"`
	Skills           []Document   `json:"skills"`
	Ceiling          Ceiling      `json:"ceiling"`
}

// Capability is one provider-neutral capability the package may ask for.
type Capability struct {
	Key         string   `json:"capabilityKey"`
	Risk        Risk     `json:"risk"`
	Approval    Approval `json:"approval"`
	Description string   `json:"description"`
}

// Job is one workflow a calling agent may run.
type Job struct {
	Name             string      `json:"name"`
	Purpose          string      `json:"purpose"`
	DoneMeans        string      `json:"doneMeans"`
	InputSchema      InputSchema `json:"inputSchema"`
	Steps            []Step      `json:"steps"`
	RequiredEvidence []string    `json:"requiredEvidence"`
	OutcomeRule      OutcomeRule `json:"outcomeRule"`
}

// InputSchema is the JSON Schema of a job's inputs: an object whose
// properties are typed scalars, closed to other properties.
type InputSchema struct {
	Type                 string                   `json:"type"`
	Properties           map[string]InputProperty `json:"properties"`
	Required             []string                 `json:"required"`
	AdditionalProperties bool                     `json:"additionalProperties"`
}

// InputProperty is the JSON Schema of one input.
type InputProperty struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Pattern     string   `json:"pattern,omitempty"`
	MaxLength   *int64   `json:"maxLength,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
}

// Step is one step of a job. Which fields are set depends on Kind.
type Step struct {
	ID         string   `json:"id"`
	Kind       StepKind `json:"kind"`
	Capability string   `json:"capability,omitempty"`
	Arguments  string   `json:"arguments,omitempty"`
	Predicate  string   `json:"predicate,omitempty"`
	Evidence   string   `json:"evidence,omitempty"`
	// SkippableWhile, when set, lets a person skip this step of a paused
	// run instead of approving it, but only while the named guard step (an
	// earlier guard of the same job) holds. Only read and check steps and
	// effects through a read_only capability may carry it: a consequential
	// effect or a guard is never skippable. Absent, the canonical IR is as
	// it was before the field existed.
	SkippableWhile string `json:"skippableWhile,omitempty"`
	// Answer, on a read or check step, says how later steps see what the
	// step read: AnswerText for the server's text (steps.X.text, and
	// steps.X.json when the text parses as JSON), for a tool that answers
	// in content blocks rather than structured content. Absent, the step's
	// result is the structured content, and the canonical IR is as it was
	// before the field existed.
	Answer StepAnswer `json:"answer,omitempty"`
}

// StepAnswer is how a read or check step's result is seen by later steps.
type StepAnswer string

// Step answers.
const (
	// AnswerText: the result is {"text": …, "json": …}, the server's text
	// blocks joined by newlines and, when that text is JSON, its value.
	AnswerText StepAnswer = "text"
)

// OutcomeRule maps evidence to outcome when not all required evidence holds
// (all of it holding is always "done").
type OutcomeRule struct {
	MissingEvidence string `json:"missingEvidence"`
	GuardFailed     string `json:"guardFailed"`
}

// Evaluator is a pure CUE component: one argument or predicate expression
// with the authority that vouches for how it is evaluated.
type Evaluator struct {
	Name      string        `json:"name"`
	Kind      EvaluatorKind `json:"kind"`
	Authority string        `json:"authority"`
	Imports   []string      `json:"imports"`
	// Source is the whole CUE component file; Digest is its sha256.
	Source string `json:"source"`
	Digest string `json:"digest"`
}

// Document is a persona or skill text with its digest.
type Document struct {
	Name      string `json:"name"`
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Text      string `json:"text"`
}

// Ceiling is the most authority the package may ever be granted.
type Ceiling struct {
	// Capabilities are capability keys or prefixes ending in ".*".
	Capabilities []string `json:"capabilities"`
	MaxRisk      Risk     `json:"maxRisk"`
}

// Capability returns the declared capability with key, if any.
func (w *Worker) Capability(key string) (Capability, bool) {
	for _, c := range w.Capabilities {
		if c.Key == key {
			return c, true
		}
	}
	return Capability{}, false
}

// Evaluator returns the evaluator named name, if any.
func (w *Worker) Evaluator(name string) (Evaluator, bool) {
	for _, e := range w.Evaluators {
		if e.Name == name {
			return e, true
		}
	}
	return Evaluator{}, false
}

// Job returns the job named name, if any.
func (w *Worker) Job(name string) (Job, bool) {
	for _, j := range w.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return Job{}, false
}
