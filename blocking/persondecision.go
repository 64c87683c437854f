package blocking

// Codes of signed decisions on paused runs: the persons a host policy
// names, how they prove who they are, and what each may decide. A refusal
// with one of these changes nothing: the item and its run stay as they
// were.
const (
	// PolicyPersonInvalid: a person in the host policy has no usable key,
	// or both kinds, or a right that names nothing.
	PolicyPersonInvalid Code = "policy_person_invalid"
	// DecisionUnsigned: a decision on a paused run came without a
	// signature, on a host whose policy names the persons who decide.
	DecisionUnsigned Code = "decision_unsigned"
	// DecisionPersonUnknown: the decision names a person the host policy
	// does not.
	DecisionPersonUnknown Code = "decision_person_unknown"
	// DecisionSignatureInvalid: the decision's signature does not verify
	// with the key the host policy names for the person.
	DecisionSignatureInvalid Code = "decision_signature_invalid"
	// DecisionNotPermitted: the person may not make this decision on this
	// package or capability.
	DecisionNotPermitted Code = "decision_not_permitted"
	// DecisionStatementMismatch: the signed statement is about another
	// item, host, call, decision or person, or its time is out of bounds.
	DecisionStatementMismatch Code = "decision_statement_mismatch"
	// DecisionRecordInvalid: a signed decision kept in the records (an
	// audit bundle) does not verify with the policy's persons.
	DecisionRecordInvalid Code = "decision_record_invalid"
)

func init() {
	register(
		Entry{PolicyPersonInvalid, StageAdmit, "a person in the host policy cannot decide as written",
			"Give each person under persons exactly one key — ssh_key, one line of an SSH public key as in ~/.ssh/id_ed25519.pub, or key, a PEM public key as cosign writes it — and at least one right in may, each naming the decisions (approve, reject, skip, teach, escalate). Check the file with oa policy check."},
		Entry{DecisionUnsigned, StageCoordinator, "the decision is not signed by a person",
			"This host's policy names the persons who decide on paused runs, so every decision is signed: give --person NAME and --key FILE (your SSH private key), --ssh-agent, or --signature FILE with --statement FILE (made with ssh-keygen -Y sign -n oa-decision over what oa attention statement prints). Nothing was decided."},
		Entry{DecisionPersonUnknown, StageCoordinator, "the host policy names no such person",
			"Only the persons under persons in the host policy may decide on paused runs. Check the name (oa policy check lists them), or ask the host's operator to add you with your public key. Nothing was decided."},
		Entry{DecisionSignatureInvalid, StageCoordinator, "the decision's signature is not the person's",
			"The signature does not verify with the key the host policy names for this person: sign with your own key (the one whose public half is in the policy), over the statement oa attention statement prints for this item and decision, with namespace oa-decision. Nothing was decided."},
		Entry{DecisionNotPermitted, StageCoordinator, "the person may not make this decision here",
			"The host policy does not give this person this decision on this package or capability (persons.NAME.may). Ask someone who may, or ask the host's operator to widen your rights. Nothing was decided."},
		Entry{DecisionStatementMismatch, StageCoordinator, "the signed statement is not this decision",
			"The statement signed names another item, host, deployment, proposed call, decision or person, or was made before the item existed or too far ahead of this host's clock. Print the statement again with oa attention statement ID --decision DECISION --person NAME, sign that, and give both. Nothing was decided."},
		Entry{DecisionRecordInvalid, StageCoordinator, "a recorded decision does not verify",
			"A signed decision in the records does not verify with the key the policy names for its person, names another host or deployment, or was made by a person without that right: it was changed or added outside the coordinator. Treat the bundle's decisions as untrusted and ask the host's operator for a fresh export."},
	)
}
