package schemas

import (
	"os"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
)

// TestCheckIRStopsWhereAsked: each step of CheckIR refuses what it alone
// sees, and a check that stops before that step accepts it.
func TestCheckIRStopsWhereAsked(t *testing.T) {
	good, err := os.ReadFile("../ir/testdata/clinic-triage.ir.json")
	if err != nil {
		t.Fatal(err)
	}
	edited := func(edit func(w *ir.Worker)) []byte {
		w, err := ir.Decode(good)
		if err != nil {
			t.Fatal(err)
		}
		edit(w)
		b, err := ir.Encode(w)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	notCanonical := append([]byte(" "), good...)
	badSchema := edited(func(w *ir.Worker) { w.Version = "one" })
	badDigest := edited(func(w *ir.Worker) { w.Persona.Text += " Be brief." }) // digest no longer matches
	customerState := edited(func(w *ir.Worker) { w.Jobs[0].Purpose += " Mail triage.lead@clinic.example." })
	cases := []struct {
		name string
		b    []byte
		c    IRCheck
		want blocking.Code // "" accepts
	}{
		{"good, every step", good, IRCheck{Canonical: true}, ""},
		{"not canonical, lenient", notCanonical, IRCheck{}, ""},
		{"not canonical, canonical required", notCanonical, IRCheck{Canonical: true}, blocking.IRMalformed},
		{"schema", badSchema, IRCheck{Through: IRSchema}, blocking.IRSchemaViolation},
		{"invariant, schema only", badDigest, IRCheck{Through: IRSchema}, ""},
		{"invariant", badDigest, IRCheck{Through: IRValid}, blocking.IRDigestMismatch},
		{"customer state, invariants only", customerState, IRCheck{Through: IRValid}, ""},
		{"customer state", customerState, IRCheck{}, blocking.CustomerStateEmail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := CheckIR(c.b, c.c)
			l := blocking.Refusals(err)
			switch {
			case c.want == "" && (err != nil || w == nil):
				t.Fatalf("CheckIR = %v, want accepted", err)
			case c.want != "" && (w != nil || len(l) == 0 || l[0].Code != c.want):
				t.Fatalf("CheckIR = %v, want %s", err, c.want)
			}
		})
	}
}

// TestCheckFetchedIRStopsAtTheSchema: the check a fetch holds an
// artifact's IR to is canonical decoding and #Worker, as oci.Fetch did
// before issue 42 moved it here; the invariants and the customer-state
// scan are left to the stages after it.
func TestCheckFetchedIRStopsAtTheSchema(t *testing.T) {
	good, err := os.ReadFile("../ir/testdata/clinic-triage.ir.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ir.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	w.Persona.Text += " Be brief." // an invariant: the digest no longer matches
	badDigest, err := ir.Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	w.Version = "one"
	badSchema, err := ir.Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		b    []byte
		want blocking.Code // "" accepts
	}{
		{"good", good, ""},
		{"not canonical", append([]byte(" "), good...), blocking.IRMalformed},
		{"schema", badSchema, blocking.IRSchemaViolation},
		{"invariant, left to the stages", badDigest, ""},
	}
	for _, c := range cases {
		got, err := CheckFetchedIR(c.b)
		l := blocking.Refusals(err)
		switch {
		case c.want == "" && (err != nil || got == nil):
			t.Errorf("%s: CheckFetchedIR = %v, want accepted", c.name, err)
		case c.want != "" && (got != nil || len(l) == 0 || l[0].Code != c.want):
			t.Errorf("%s: CheckFetchedIR = %v, want %s", c.name, err, c.want)
		}
	}
}
