package blocking

// Codes of the host policy's notify section: how the host tells someone
// that a run paused for a person.
const (
	// PolicyNotifyInvalid: the notify section names neither a command nor
	// a webhook, a command that is not an absolute path, or a webhook that
	// is not https (or http on loopback).
	PolicyNotifyInvalid Code = "policy_notify_invalid"
)

func init() {
	register(
		Entry{PolicyNotifyInvalid, StageAdmit, "the policy's notify section cannot be used as written",
			"Under notify give command: [\"/absolute/path/to/program\", \"arg\", …] (run with OA_ATTENTION_ID, OA_ATTENTION_COPY, OA_DEPLOYMENT and OA_RUN_ID set when a run pauses), webhook: \"https://…\" (http only on a loopback address such as http://127.0.0.1:8080/…, no user name or password in it), or both. Check the file with oa policy check."},
	)
}
