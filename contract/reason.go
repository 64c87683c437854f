package contract

// Reason is the closed reason of a run result. Each reason fixes the
// outcome, whether the record changed, whether a retry is safe, and the
// copy shown to the calling agent: nothing observed, no input value, no
// secret and no path is ever part of a result.
type Reason string

// Reasons of run results, grouped by the outcome each fixes (Reasons is
// the table that binds them).
const (
	// ReasonVerified (done): the change was made and read back as expected.
	ReasonVerified Reason = "verified"
	// ReasonRead (done) answers a read-only capability tool: nothing
	// changed.
	ReasonRead Reason = "read"
	// ReasonCheckedNoChange (done): every step of a workflow that makes
	// no change ran and its evidence held; nothing was written.
	ReasonCheckedNoChange Reason = "checked_no_change"

	// ReasonInProgress (running): the run is still going.
	ReasonInProgress Reason = "in_progress"

	// ReasonApprovalRequired (needs_review): the run stopped before a step
	// that needs a person's approval.
	ReasonApprovalRequired Reason = "approval_required"
	// ReasonEscalated (needs_review): a person escalated the paused run.
	ReasonEscalated Reason = "escalated"
	// ReasonApprovedAwaitingCaller (needs_review): a person approved the
	// paused step; the run goes on when its caller asks again with the
	// same request.
	ReasonApprovedAwaitingCaller Reason = "approved_awaiting_caller"
	// ReasonSkipAwaitingCaller (needs_review): a person chose to skip the
	// paused step; the run goes on without it when its caller asks again
	// with the same request.
	ReasonSkipAwaitingCaller Reason = "skip_approved_awaiting_caller"
	// ReasonSkippedNeedsReview (needs_review): a person skipped the step
	// a required piece of evidence comes from, and the workflow asks a
	// person to look when evidence is missing.
	ReasonSkippedNeedsReview Reason = "skipped_evidence_needs_review"
	// ReasonDuplicateRecord (needs_review): the app refused the change as a
	// duplicate.
	ReasonDuplicateRecord Reason = "duplicate_record"
	// ReasonGuardReview (needs_review): a precondition did not hold and the
	// workflow asks a person to look.
	ReasonGuardReview Reason = "guard_needs_review"
	// ReasonPartiallyDone (needs_review): an earlier effect of the run was
	// made, a later step stopped before its own.
	ReasonPartiallyDone Reason = "partially_done"
	// ReasonApprovalAfterChange (needs_review) is approval_required after
	// an earlier effect of the same run was made.
	ReasonApprovalAfterChange Reason = "approval_required_after_change"
	// ReasonEvidenceReview (needs_review): the change was sent but reading
	// it back did not show it, and the workflow asks a person to look.
	ReasonEvidenceReview Reason = "evidence_needs_review"
	// ReasonRunRecordTampered (needs_review): the stored run the request
	// names was changed outside the coordinator; nothing is replayed or
	// retried.
	ReasonRunRecordTampered Reason = "run_record_tampered"

	// ReasonDownstreamQuestion (needs_review): while making the change,
	// the app asked the person a question; the change waits for the
	// answer.
	ReasonDownstreamQuestion Reason = "downstream_question"
	// ReasonDownstreamQuestionUnanswered (needs_review): the app asked a
	// question during the change and its call ended (session over, or no
	// answer in time) without a person's answer; the app was told cancel
	// and what it did is unknown until a person looks.
	ReasonDownstreamQuestionUnanswered Reason = "downstream_question_unanswered"

	// ReasonDownstreamQuestionClosed (not_sure_if_saved): a person closed
	// an unanswered downstream question; what the app did is unknown.
	ReasonDownstreamQuestionClosed Reason = "downstream_question_closed"
	// ReasonNotConfirmed (not_sure_if_saved): the change was sent, reading
	// it back did not show it.
	ReasonNotConfirmed Reason = "not_confirmed"
	// ReasonSkippedNotConfirmed (not_sure_if_saved): a person skipped the
	// step a required piece of evidence comes from, so the run's change
	// was never read back.
	ReasonSkippedNotConfirmed Reason = "skipped_not_confirmed"
	// ReasonEffectTimeout (not_sure_if_saved): the app did not answer in
	// time after the change was sent.
	ReasonEffectTimeout Reason = "effect_timeout"
	// ReasonEffectUnclear (not_sure_if_saved): the app answered the change
	// with an error that does not say whether anything was written.
	ReasonEffectUnclear Reason = "effect_unclear"
	// ReasonCheckOverBudget (not_sure_if_saved): the change was sent, and
	// checking it took more time or memory than the host allows.
	ReasonCheckOverBudget Reason = "check_over_budget"
	// ReasonInterrupted (not_sure_if_saved): the coordinator stopped while
	// the change was being made.
	ReasonInterrupted Reason = "interrupted"
	// ReasonClientDisconnected (not_sure_if_saved): the MCP client went
	// away while a change was being made, which ended the session and the
	// call.
	ReasonClientDisconnected Reason = "client_disconnected"

	// ReasonPlanChanged (did_not_run): the host's execution plan is not the
	// approved one.
	ReasonPlanChanged Reason = "plan_changed"
	// ReasonToolDrift (did_not_run): the app's tools are not the verified
	// ones.
	ReasonToolDrift Reason = "tool_drift"
	// ReasonNotAdmitted (did_not_run): the release is not actively
	// admitted on this host.
	ReasonNotAdmitted Reason = "not_admitted"
	// ReasonInvalidInputs (did_not_run): the inputs do not match the
	// workflow's input schema.
	ReasonInvalidInputs Reason = "invalid_inputs"
	// ReasonUnknownWorkflow (did_not_run): no workflow has that name.
	ReasonUnknownWorkflow Reason = "unknown_workflow"
	// ReasonGuardFailed (did_not_run): a precondition did not hold.
	ReasonGuardFailed Reason = "guard_failed"
	// ReasonAppOffline (did_not_run, safe to retry): the app was offline.
	ReasonAppOffline Reason = "app_offline"
	// ReasonReadFailed (did_not_run, safe to retry): reading the record
	// failed before any change.
	ReasonReadFailed Reason = "read_failed"
	// ReasonRejected (did_not_run): a person rejected the change.
	ReasonRejected Reason = "rejected"
	// ReasonRequestIDConflict (did_not_run): the request_id was already
	// used with other inputs or another workflow.
	ReasonRequestIDConflict Reason = "request_id_conflict"
	// ReasonAttemptsExhausted (did_not_run): the request was tried the most
	// times allowed.
	ReasonAttemptsExhausted Reason = "attempts_exhausted"
	// ReasonInterruptedEarly (did_not_run, safe to retry): the coordinator
	// stopped before any change was sent.
	ReasonInterruptedEarly Reason = "interrupted_before_effect"
	// ReasonEvaluationFailed (did_not_run): the workflow could not compute
	// its next step from what it read.
	ReasonEvaluationFailed Reason = "evaluation_failed"
	// ReasonEvaluationOverBudget (did_not_run, not safe to retry): a step's
	// evaluation took more time or memory than the host allows, before any
	// change was sent; the same inputs would go over again.
	ReasonEvaluationOverBudget Reason = "evaluation_over_budget"
	// ReasonTargetRefused (did_not_run): the app refused the change.
	ReasonTargetRefused Reason = "target_refused"
	// ReasonHostRecordsDisagree (did_not_run): the host's store does not
	// agree with its signed head (records removed or edited), so no
	// attempt was started: none could be sealed, and a removed run could
	// otherwise be repeated.
	ReasonHostRecordsDisagree Reason = "host_records_disagree"
	// ReasonAppCredentials (did_not_run): the app refused the host's
	// credentials (expired, revoked or lacking permission) before doing
	// anything.
	ReasonAppCredentials Reason = "app_credentials_refused"
	// ReasonAppSettingMissing (did_not_run): the app's server was not
	// started because a setting its connection takes from the host's
	// environment is not set there; retrying does not help until the
	// operator records or exports it.
	ReasonAppSettingMissing Reason = "app_setting_missing"
)

// Record-changed values: whether a run changed the record.
const (
	// ChangedYes: the record was changed.
	ChangedYes = "yes"
	// ChangedNo: the record was not changed.
	ChangedNo = "no"
	// ChangedUnknown: the record may have been changed.
	ChangedUnknown = "unknown"
)

// Proof values: how the result is backed.
const (
	// ProofSealed: a receipt signed by the host receipt key, chained.
	ProofSealed = "sealed"
	// ProofLocal: the coordinator's own durable record, no receipt yet.
	ProofLocal = "local"
	// ProofSimulated: produced by the sandbox connector.
	ProofSimulated = "simulated"
	// ProofNone: nothing backs it (refused before a run existed).
	ProofNone = "none"
)

// ReasonInfo is the fixed contract of one reason.
type ReasonInfo struct {
	Reason        Reason  `json:"reason"`
	Outcome       Outcome `json:"outcome"`
	RecordChanged string  `json:"record_changed"`
	SafeToRetry   bool    `json:"safe_to_retry"`
	WhatHappened  string  `json:"what_happened"`
	NextAction    string  `json:"next_action"`
}

// Reasons is the closed reason table. Only reasons that prove nothing was
// written may be safe to retry, and of those only the ones a retry can
// change (the app coming back, a read succeeding).
var Reasons = []ReasonInfo{
	{ReasonVerified, OutcomeDone, ChangedYes, false,
		"The change was made and read back as expected.",
		"Report it as done. Do not run it again."},
	{ReasonCheckedNoChange, OutcomeDone, ChangedNo, false,
		"Every step ran and what the workflow checks held; this workflow makes no change, so nothing was written.",
		"Report what was checked. Nothing needs undoing; running it again checks again."},
	{ReasonRead, OutcomeDone, ChangedNo, false,
		"The record was read; nothing was changed.",
		"Use what was read; read again for a fresh view."},
	{ReasonInProgress, OutcomeRunning, ChangedUnknown, false,
		"The run is still going.",
		"Call get_run with the run_id until the outcome is terminal."},
	{ReasonApprovalRequired, OutcomeNeedsReview, ChangedNo, false,
		"The run stopped before a step that needs a person's approval; nothing was changed.",
		"Tell the person a decision is waiting; it is listed by list_needs_attention. Do not retry."},
	{ReasonPartiallyDone, OutcomeNeedsReview, ChangedYes, false,
		"An earlier change of this run was made; a later step stopped before making its own change.",
		"Tell the person the workflow stopped part-way; they decide what happens next. Do not retry."},
	{ReasonApprovalAfterChange, OutcomeNeedsReview, ChangedYes, false,
		"An earlier change of this run was made; the run stopped before a later step that needs a person's approval.",
		"Tell the person a decision is waiting; it is listed by list_needs_attention. Do not retry."},
	{ReasonApprovedAwaitingCaller, OutcomeNeedsReview, ChangedNo, false,
		"A person approved the paused step; nothing has been changed yet.",
		"Call run_workflow again with the same request_id and the same inputs to continue the run."},
	{ReasonEscalated, OutcomeNeedsReview, ChangedNo, false,
		"A person escalated the paused run; nothing was changed.",
		"Leave it to the people it was escalated to. Do not retry."},
	{ReasonSkipAwaitingCaller, OutcomeNeedsReview, ChangedNo, false,
		"A person chose to skip the paused step; nothing has been changed yet.",
		"Call run_workflow again with the same request_id and the same inputs to continue the run without that step."},
	{ReasonSkippedNeedsReview, OutcomeNeedsReview, ChangedUnknown, false,
		"A person skipped a step the workflow's evidence comes from, so the run could not confirm its result; the workflow asks a person to look.",
		"Tell the person to check the record. Never retry it yourself."},
	{ReasonDuplicateRecord, OutcomeNeedsReview, ChangedNo, false,
		"The app refused the change as a duplicate; nothing was written.",
		"Ask the person whether the existing entry is the one they meant."},
	{ReasonGuardReview, OutcomeNeedsReview, ChangedNo, false,
		"A precondition did not hold, so the run stopped before any change; the workflow asks a person to look.",
		"Tell the person the record is not in the state the workflow needs."},
	{ReasonEvidenceReview, OutcomeNeedsReview, ChangedUnknown, false,
		"The change was sent but reading it back did not show it; the workflow asks a person to look.",
		"Tell the person to check the record. Never retry it yourself."},
	{ReasonDownstreamQuestion, OutcomeNeedsReview, ChangedUnknown, false,
		"While making the change, the app asked the person a question; the change waits for their answer.",
		"Tell the person the app is asking them something; they answer it through their MCP client (decide_attention_item) or on the host (oa attention answer). Do not retry."},
	{ReasonDownstreamQuestionUnanswered, OutcomeNeedsReview, ChangedUnknown, false,
		"The app asked the person a question during the change and no answer came before the call ended; the app was told the question was cancelled, and what it saved is not known.",
		"Tell the person to check the record in the app, then close the item (oa attention reject ID). Never retry it yourself."},
	{ReasonDownstreamQuestionClosed, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The app asked a question during the change that no one answered in time; a person closed it. What the app saved is not known here.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonNotConfirmed, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The change was sent, but reading the record back did not show it.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonCheckOverBudget, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The change was sent, but checking it took more time or memory than this host allows.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonSkippedNotConfirmed, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"A person skipped a step the workflow's evidence comes from, so the change was not checked by reading it back.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonEffectTimeout, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The app did not answer in time after the change was sent; it may have been saved.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonEffectUnclear, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The app answered the change with an error that does not say whether anything was written.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonInterrupted, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The coordinator stopped while the change was being made; it may have been saved.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonClientDisconnected, OutcomeNotSureIfSaved, ChangedUnknown, false,
		"The client went away while the change was being made, which ended the session; it may have been saved.",
		"Tell the person to check the record before anyone tries again. Never retry it yourself."},
	{ReasonPlanChanged, OutcomeDidNotRun, ChangedNo, false,
		"The host's execution plan is not the one a person approved, so nothing was done.",
		"Tell the operator the deployment needs to be reviewed and bound again."},
	{ReasonToolDrift, OutcomeDidNotRun, ChangedNo, false,
		"The app's tools are not the ones verified for this deployment, so nothing was done.",
		"Tell the operator the connection needs to be verified and the deployment bound again."},
	{ReasonNotAdmitted, OutcomeDidNotRun, ChangedNo, false,
		"The worker release is not actively admitted on this host, so nothing was done.",
		"Tell the operator the release needs to be admitted again."},
	{ReasonInvalidInputs, OutcomeDidNotRun, ChangedNo, false,
		"The inputs do not match the workflow's input schema, so nothing was done.",
		"Check the inputs against list_workflows and start a new request."},
	{ReasonUnknownWorkflow, OutcomeDidNotRun, ChangedNo, false,
		"There is no workflow by that name, so nothing was done.",
		"Pick a workflow from list_workflows."},
	{ReasonGuardFailed, OutcomeDidNotRun, ChangedNo, false,
		"A precondition did not hold, so the run stopped before any change.",
		"Tell the person the record is not in the state the workflow needs."},
	{ReasonAppOffline, OutcomeDidNotRun, ChangedNo, true,
		"The app was offline; nothing was written.",
		"Retry later with the same request_id."},
	{ReasonReadFailed, OutcomeDidNotRun, ChangedNo, true,
		"Reading the record failed before any change was made.",
		"Retry later with the same request_id."},
	{ReasonRejected, OutcomeDidNotRun, ChangedNo, false,
		"A person rejected the change; nothing was written.",
		"Tell the person the change was not made, as they decided."},
	{ReasonRequestIDConflict, OutcomeDidNotRun, ChangedNo, false,
		"This request_id was already used with different inputs or another workflow, so nothing was done.",
		"Use a new request_id for a new request; reuse one only to ask about the same request."},
	{ReasonAttemptsExhausted, OutcomeDidNotRun, ChangedNo, false,
		"This request was tried the most times allowed; nothing was written.",
		"Tell the person the request keeps failing and needs an operator."},
	{ReasonInterruptedEarly, OutcomeDidNotRun, ChangedNo, true,
		"The coordinator stopped before any change was sent; nothing was written.",
		"Retry with the same request_id."},
	{ReasonEvaluationFailed, OutcomeDidNotRun, ChangedNo, false,
		"The workflow could not compute its next step from what it read, so it stopped before any change.",
		"Tell the operator; the package or the record needs a look."},
	{ReasonEvaluationOverBudget, OutcomeDidNotRun, ChangedNo, false,
		"Working out the next step took more time or memory than this host allows, so the run stopped before any change.",
		"Tell the operator; the package or the inputs need a look. Do not retry with the same inputs."},
	{ReasonTargetRefused, OutcomeDidNotRun, ChangedNo, false,
		"The app refused the change (the record is missing, closed or the change is invalid); nothing was written.",
		"Tell the person the record could not take this change."},
	{ReasonHostRecordsDisagree, OutcomeDidNotRun, ChangedNo, false,
		"The host's records do not agree with what it signed (records were removed or edited), so nothing was started.",
		"Tell the operator the host's records need an audit (oa receipts verify). Do not retry."},
	{ReasonAppCredentials, OutcomeDidNotRun, ChangedNo, false,
		"The app refused this host's credentials before doing anything; nothing was written.",
		"Tell the operator the connection's login or token needs renewing; retry with the same request_id after they fix it."},
	{ReasonAppSettingMissing, OutcomeDidNotRun, ChangedNo, false,
		"The app could not be started: a setting its connection needs is not set on this host; nothing was done.",
		"Tell the operator the connection is missing a setting (oa harness inspect names it); retry with the same request_id after they set it."},
	{ReasonRunRecordTampered, OutcomeNeedsReview, ChangedUnknown, false,
		"The host's record of this request was changed outside the coordinator, so nothing was replayed or tried again.",
		"Tell the operator the host's run records need an audit. Do not retry; a new request needs a new request_id."},
}

// Info returns r's fixed contract; ok is false for a value not in Reasons.
func (r Reason) Info() (info ReasonInfo, ok bool) {
	for _, i := range Reasons {
		if i.Reason == r {
			return i, true
		}
	}
	return ReasonInfo{}, false
}

// ProofValues and RecordChangedValues are the closed sets of a result's
// proof and record_changed.
var (
	ProofValues         = []string{ProofSealed, ProofLocal, ProofSimulated, ProofNone}
	RecordChangedValues = []string{ChangedYes, ChangedNo, ChangedUnknown}
)
