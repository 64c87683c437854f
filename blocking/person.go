package blocking

// PersonMissing is raised when a decision a person signs for names no one:
// every admission, revocation, registry signature, connection change and
// binding records who decided, so a blank name is refused before anything
// is checked or written.
const PersonMissing Code = "person_missing"

func init() {
	register(
		Entry{PersonMissing, StageAdmit, "no person named for the decision",
			"Admissions, revocations, registry signatures, connection changes and bindings are signed records of who decided; name that person (with oa, --as NAME) and run the command again. Nothing was checked or written."},
	)
}
