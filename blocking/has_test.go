package blocking

import (
	"errors"
	"fmt"
	"testing"
)

// TestHas: Has finds a code alone, in a List and behind %w, matches any of
// several codes, and says no for a fault or another code.
func TestHas(t *testing.T) {
	one := New(PersonMissing, "the admission names no person")
	list := List{New(AdmissionMissing, "x"), New(PersonMissing, "y")}
	wrapped := fmt.Errorf("admit: %w", one)
	for _, tc := range []struct {
		err   error
		codes []Code
		want  bool
	}{
		{one, []Code{PersonMissing}, true},
		{list, []Code{PersonMissing}, true},
		{wrapped, []Code{PersonMissing}, true},
		{wrapped, []Code{AdmissionMissing, PersonMissing}, true},
		{one, []Code{AdmissionMissing}, false},
		{errors.New("person_missing"), []Code{PersonMissing}, false},
		{nil, []Code{PersonMissing}, false},
		{one, nil, false},
	} {
		if got := Has(tc.err, tc.codes...); got != tc.want {
			t.Errorf("Has(%v, %v) = %v; want %v", tc.err, tc.codes, got, tc.want)
		}
	}
}
