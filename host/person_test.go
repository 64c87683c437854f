package host_test

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
)

// TestCheckPerson: a decision with a blank name (empty or only spaces) is
// refused as person_missing; the refusal names the record being decided
// and no command-line flag, since flag names belong to the CLI.
func TestCheckPerson(t *testing.T) {
	for _, blank := range []string{"", " ", "\t \n"} {
		err := host.CheckPerson(blank, "the admission")
		l := blocking.Refusals(err)
		if len(l) != 1 || l[0].Code != blocking.PersonMissing {
			t.Fatalf("CheckPerson(%q) = %v; want one %s", blank, err, blocking.PersonMissing)
		}
		if !strings.Contains(l[0].Detail, "the admission") || strings.Contains(l[0].Detail, "--") {
			t.Fatalf("CheckPerson(%q) detail %q: want the record named and no flag", blank, l[0].Detail)
		}
	}
	if err := host.CheckPerson("Dr Ada", "the admission"); err != nil {
		t.Fatalf("CheckPerson(named) = %v", err)
	}
}
