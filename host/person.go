package host

import (
	"strings"

	"github.com/oa-dev/oa/blocking"
)

// CheckPerson refuses a decision that names no person (person_missing).
// Every record a person signs on or for a host carries who decided, so the
// admission, revocation, registry signature, connection change and binding
// all check the name here, before anything is checked or written.
// decision says what is being decided ("the admission"); it names the
// record in the refusal, never a command-line flag.
func CheckPerson(name, decision string) error {
	if strings.TrimSpace(name) == "" {
		return blocking.New(blocking.PersonMissing, "%s names no person", decision)
	}
	return nil
}
