package compiler

// The Go view of a bundle after it has been unified with #Bundle and found
// concrete. The rules live in schemas/bundle.cue; these types only read the
// result, so every field here is already known to be present and valid.

type bundleSource struct {
	Name           string                      `json:"name"`
	Version        string                      `json:"version"`
	Protocol       string                      `json:"protocol"`
	Responsibility string                      `json:"responsibility"`
	Requires       []string                    `json:"requires"`
	Capabilities   map[string]capabilitySource `json:"capabilities"`
	Jobs           map[string]jobSource        `json:"jobs"`
	Evaluators     map[string]evaluatorSource  `json:"evaluators"`
	Persona        string                      `json:"persona"`
	Ceiling        ceilingSource               `json:"ceiling"`
}

type capabilitySource struct {
	Description string `json:"description"`
	Risk        string `json:"risk"`
	Approval    string `json:"approval"`
}

type jobSource struct {
	Purpose   string                 `json:"purpose"`
	DoneMeans string                 `json:"done_means"`
	Inputs    map[string]inputSource `json:"inputs"`
	Steps     []stepSource           `json:"steps"`
	Evidence  []string               `json:"evidence"`
	Outcome   outcomeSource          `json:"outcome"`
}

type inputSource struct {
	Type        string   `json:"type"`
	Description string   `json:"description"`
	Optional    bool     `json:"optional"`
	Pattern     string   `json:"pattern"`
	MaxLength   *int64   `json:"max_length"`
	Enum        []string `json:"enum"`
	Minimum     *float64 `json:"minimum"`
	Maximum     *float64 `json:"maximum"`
}

type stepSource struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	Capability     string `json:"capability"`
	Args           string `json:"args"`
	Predicate      string `json:"predicate"`
	Evidence       string `json:"evidence"`
	SkippableWhile string `json:"skippable_while"`
	Answer         string `json:"answer"`
}

type outcomeSource struct {
	MissingEvidence string `json:"missing_evidence"`
	GuardFailed     string `json:"guard_failed"`
}

type evaluatorSource struct {
	Kind      string   `json:"kind"`
	Authority string   `json:"authority"`
	Imports   []string `json:"imports"`
	Expr      string   `json:"expr"`
}

type ceilingSource struct {
	Capabilities []string `json:"capabilities"`
	MaxRisk      string   `json:"max_risk"`
}
