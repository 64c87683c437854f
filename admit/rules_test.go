package admit

import (
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
)

// TestSatisfies: a predicate satisfies a rule's constraint when it says
// what the constraint says; the failing field is named by path, and the
// predicate's value never appears.
func TestSatisfies(t *testing.T) {
	constraint := cuecontext.New().CompileString(`
import "strings"
buildDefinition: externalParameters: workflow: repository: "https://github.com/acme/workers"
runDetails: builder: id: strings.HasPrefix("https://github.com/")
`)
	if constraint.Err() != nil {
		t.Fatal(constraint.Err())
	}
	good := `{"buildDefinition":{"externalParameters":{"workflow":{"repository":"https://github.com/acme/workers","ref":"refs/tags/v1"}}},"runDetails":{"builder":{"id":"https://github.com/actions/runner"}}}`
	for name, c := range map[string]struct {
		predicate, field string
	}{
		"satisfied":          {good, ""},
		"another repository": {strings.Replace(good, "acme/workers", "evil-secret-value/workers", 1), "buildDefinition.externalParameters.workflow.repository"},
		"missing repository": {strings.Replace(good, `"repository":"https://github.com/acme/workers",`, "", 1), "buildDefinition.externalParameters.workflow.repository"},
		"missing section":    {`{"runDetails":{"builder":{"id":"https://github.com/x"}}}`, "buildDefinition"},
		"builder elsewhere":  {strings.Replace(good, "https://github.com/actions/runner", "https://evil-secret-value.example/runner", 1), "runDetails.builder.id"},
		"wrong kind":         {strings.Replace(good, `{"workflow":`, `{"workflow":7,"x":`, 1), "buildDefinition.externalParameters.workflow"},
		"not JSON":           {`{`, "."},
	} {
		t.Run(name, func(t *testing.T) {
			field, ok := Satisfies(constraint, []byte(c.predicate))
			if ok != (c.field == "") || field != c.field {
				t.Fatalf("Satisfies = %q, %v; want %q", field, ok, c.field)
			}
			if strings.Contains(field, "evil-secret-value") {
				t.Fatal("the failing field carries the predicate's value")
			}
		})
	}
}
