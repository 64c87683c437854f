package blocking

// Codes of going back to an older release (issue 39): versions of a
// package are admitted side by side, and re-admitting a release that an
// admission of another release of its package came after is a rollback,
// made only when asked for, with a reason, and recorded.
const (
	// RollbackReasonInvalid: a rollback was asked for without a reason, or
	// with one that is too long or holds control characters; or a reason
	// was given for an admission that is not a rollback.
	RollbackReasonInvalid Code = "rollback_reason_invalid"
	// RollbackUnneeded: a rollback was asked for, but no admission of
	// another release of the package came after this release's own (or it
	// was never admitted here): there is nothing to go back from.
	RollbackUnneeded Code = "rollback_unneeded"
)

func init() {
	register(
		Entry{RollbackReasonInvalid, StageAdmit, "a rollback needs one reason of at most 500 characters on one line",
			"Going back to an older release is recorded with who and why: `oa admit REF@sha256:… --rollback --reason TEXT --as NAME`, the reason one line of at most 500 characters. --reason is only for a rollback: a plain admission takes none."},
		Entry{RollbackUnneeded, StageAdmit, "nothing to roll back from",
			"No admission of another release of this package came after this release's own (or it was never admitted here), so admitting it goes back from nothing: run `oa admit REF@sha256:… --as NAME` without --rollback and --reason."},
	)
}
