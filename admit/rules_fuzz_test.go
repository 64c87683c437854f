package admit

import (
	"testing"

	"cuelang.org/go/cue/cuecontext"
)

// FuzzSatisfies feeds arbitrary predicate bytes to a rule: it never
// panics, and names a failing field exactly when the predicate fails.
// Seeds in testdata/fuzz/FuzzSatisfies and below.
func FuzzSatisfies(f *testing.F) {
	constraint := cuecontext.New().CompileString(`a: b: "x"
n: >=1
l: [...string]`)
	if constraint.Err() != nil {
		f.Fatal(constraint.Err())
	}
	f.Add([]byte(`{"a":{"b":"x"},"n":2,"l":["s"]}`))
	f.Add([]byte(`{"a":{"b":"y"},"n":0}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"a":null}`))
	f.Fuzz(func(t *testing.T, predicate []byte) {
		field, ok := Satisfies(constraint, predicate)
		if ok != (field == "") {
			t.Fatalf("Satisfies = %q, %v", field, ok)
		}
	})
}
