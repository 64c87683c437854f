package blocking

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
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

// TestCauseIsKeptButNeverShown: a refusal made from an error keeps it for
// errors.Is/As and the operator's log, never encodes it, and a refusal
// made from another refusal is the outer one (its code decides).
func TestCauseIsKeptButNeverShown(t *testing.T) {
	e := New(IRUnreadable, "%v", os.ErrNotExist)
	if !errors.Is(e, os.ErrNotExist) || e.Unwrap() != os.ErrNotExist {
		t.Fatalf("cause lost: %v", e.Unwrap())
	}
	b, err := json.Marshal(e)
	if err != nil || strings.Contains(string(b), "cause") || strings.Contains(string(b), "Cause") {
		t.Fatalf("encoded %s, %v", b, err)
	}
	if New(PersonMissing, "no error here").Unwrap() != nil {
		t.Fatal("a refusal from no error has a cause")
	}
	inner := List{New(AdmissionMissing, "inner")}
	outer := fmt.Errorf("step: %w", New(PersonMissing, "made from %v", inner))
	if got := Refusals(outer); len(got) != 1 || got[0].Code != PersonMissing {
		t.Fatalf("Refusals = %v; want the outer person_missing", got)
	}
	if Has(outer, AdmissionMissing) {
		t.Fatal("the inner code leaked through the outer refusal")
	}
	joined := errors.Join(errors.New("fault"), New(PersonMissing, "x"))
	if !Has(joined, PersonMissing) || ExitStatus(joined) != 2 {
		t.Fatalf("a joined refusal is lost: %v", Refusals(joined))
	}
}
