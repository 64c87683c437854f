package blocking

// Codes of the operator's skip and teach decisions: the package's
// skippable declarations at compile, and the decisions on a paused run.
const (
	// StepSkipConsequential: skippable_while on a guard step, or on an
	// effect through a consequential capability.
	StepSkipConsequential Code = "step_skip_consequential"
	// StepSkipGuardUnknown: skippable_while names no guard step earlier in
	// the same job.
	StepSkipGuardUnknown Code = "step_skip_guard_unknown"
	// SkipNotDeclared: a skip was asked for a step the package does not
	// declare skippable.
	SkipNotDeclared Code = "skip_not_declared"
	// TeachTextInvalid: a teach request's text is empty, too long, not
	// UTF-8, or holds customer state.
	TeachTextInvalid Code = "teach_text_invalid"
	// TeachRequestsFull: the item already holds the most teach requests
	// one item may.
	TeachRequestsFull Code = "teach_requests_full"
	// TeachRequestInvalid: a teach request in the records (an audit
	// bundle) does not verify.
	TeachRequestInvalid Code = "teach_request_invalid"
)

func init() {
	register(
		Entry{StepSkipConsequential, StageCompile, "a step that may never be skipped is declared skippable",
			"Only read and check steps, and effects through a read_only capability, may carry skippable_while: a person may never skip a consequential effect or a guard. Remove skippable_while from the step (or give the effect a read_only capability if it truly changes nothing)."},
		Entry{StepSkipGuardUnknown, StageCompile, "skippable_while names no earlier guard step of the job",
			"Set skippable_while to the id of a guard step that comes before this step in the same job: the skip is allowed only while that guard holds."},
		Entry{SkipNotDeclared, StageCoordinator, "the paused step may not be skipped",
			"The package does not declare this step skippable (skippable_while), so only approve, reject, escalate or teach apply. To allow skipping it, publish a package version that declares it (a teach request asks the publisher for one)."},
		Entry{TeachTextInvalid, StageCoordinator, "the teach request's text cannot be recorded",
			"Give a non-empty UTF-8 text of at most 4096 bytes describing how the package should change, without customer data (no e-mail addresses, phone numbers, card or account numbers, tokens): teach requests are audited and exported."},
		Entry{TeachRequestsFull, StageCoordinator, "the attention item holds the most teach requests it may",
			"One paused run takes at most 16 teach requests. Read them with `oa attention show ID`, and gather further requests into one message to the package's publisher."},
		Entry{TeachRequestInvalid, StageCoordinator, "a recorded teach request does not verify",
			"The teach request's signature does not verify with a receipt key the host pinned, or it names another host or a run not in the records: it was changed or added outside the coordinator. Treat the bundle's teach requests as untrusted and ask the host's operator for a fresh export."},
	)
}
