package contract

// Outcome is the outcome of a run: one of the four terminal outcomes of the
// result contract, or Running.
type Outcome string

// Outcomes of a run.
const (
	// OutcomeDone: the change was made and checked by reading it back.
	OutcomeDone Outcome = "done"
	// OutcomeNeedsReview: the run stopped; a person decides what happens
	// next.
	OutcomeNeedsReview Outcome = "needs_review"
	// OutcomeNotSureIfSaved: the change may have been made; a person
	// checks the record.
	OutcomeNotSureIfSaved Outcome = "not_sure_if_saved"
	// OutcomeDidNotRun: provably nothing was written.
	OutcomeDidNotRun Outcome = "did_not_run"
	// OutcomeRunning is the one non-terminal value.
	OutcomeRunning Outcome = "running"
)

// OutcomeInfo is the fixed copy of one outcome, shared by the coordinator's
// results and SKILL.md.
type OutcomeInfo struct {
	Outcome Outcome `json:"outcome"`
	// Terminal is false only for running.
	Terminal bool `json:"terminal"`
	// Meaning says what the outcome means.
	Meaning string `json:"meaning"`
	// MayRetry says whether safe_to_retry may ever be true with this
	// outcome; SafeToRetry is the rule as copy. Like every name an agent
	// may see (ReasonInfo, the coordinator's results), they are
	// snake_case.
	MayRetry    bool   `json:"may_retry"`
	SafeToRetry string `json:"safe_to_retry"`
	// Next is what a calling agent does on this outcome.
	Next string `json:"next"`
}

// Outcomes is the result contract's outcome table: the four terminal
// outcomes, then running.
var Outcomes = []OutcomeInfo{
	{OutcomeDone, true,
		"The change was made and checked by reading it back.",
		false, "false",
		"Report it as done. Do not run it again: a new request_id would make the change a second time."},
	{OutcomeNeedsReview, true,
		"The run stopped before making the change; a person decides what happens next.",
		false, "false",
		"Tell the person the run is waiting for their decision. Do not retry; the paused run shows in list_needs_attention."},
	{OutcomeNotSureIfSaved, true,
		"The change may have been made; a person checks the record.",
		false, "false",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{OutcomeDidNotRun, true,
		"Provably nothing was written.",
		true, "true only where a retry can succeed",
		"Retry with the same request_id only when safe_to_retry is true; otherwise pass on what_happened and next_action."},
	{OutcomeRunning, false,
		"The run is still going.",
		false, "false",
		"Call get_run with the run_id until the outcome is terminal. Do not start the workflow again."},
}

// Info returns o's fixed copy; ok is false for a value that is not an
// outcome.
func (o Outcome) Info() (info OutcomeInfo, ok bool) {
	for _, i := range Outcomes {
		if i.Outcome == o {
			return i, true
		}
	}
	return OutcomeInfo{}, false
}

// Terminal reports whether o is one of the four terminal outcomes.
func (o Outcome) Terminal() bool {
	i, ok := o.Info()
	return ok && i.Terminal
}
