package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nameRule is the rule every reason, outcome, argument and decision name
// follows: lower-case snake case, at most 64 characters.
var nameRule = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)

// declaredReasons parses reason.go and returns the value of every constant
// declared with type Reason, so the table is checked against the source
// rather than against itself.
func declaredReasons(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reason.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, e := range v.Values {
				lit, ok := e.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("reason constant %s is not a string literal", v.Names[0].Name)
				}
				s, _ := strconv.Unquote(lit.Value)
				values = append(values, s)
			}
		}
	}
	return values
}

// TestReasonTableClosed checks that the reason table is closed and
// consistent: every declared reason has exactly one row and every row a
// declared reason; each row names one known outcome, a record_changed
// value, and non-empty copy; only did_not_run reasons that wrote nothing
// may be safe to retry.
func TestReasonTableClosed(t *testing.T) {
	declared := declaredReasons(t)
	if len(declared) == 0 {
		t.Fatal("no Reason constants found in reason.go")
	}
	rows := map[Reason]int{}
	for _, r := range Reasons {
		rows[r.Reason]++
	}
	for _, d := range declared {
		if rows[Reason(d)] != 1 {
			t.Errorf("reason %q has %d rows in Reasons, want exactly 1", d, rows[Reason(d)])
		}
	}
	if len(Reasons) != len(declared) {
		t.Errorf("Reasons has %d rows, %d reasons are declared", len(Reasons), len(declared))
	}
	for _, r := range Reasons {
		if !slices.Contains(declared, string(r.Reason)) {
			t.Errorf("row %q is not a declared Reason constant", r.Reason)
		}
		if !nameRule.MatchString(string(r.Reason)) {
			t.Errorf("reason %q does not match %s", r.Reason, nameRule)
		}
		o, ok := r.Outcome.Info()
		if !ok {
			t.Errorf("reason %q has outcome %q, not one of Outcomes", r.Reason, r.Outcome)
		}
		if !slices.Contains(RecordChangedValues, r.RecordChanged) {
			t.Errorf("reason %q has record_changed %q, not one of %v", r.Reason, r.RecordChanged, RecordChangedValues)
		}
		if r.WhatHappened == "" || r.NextAction == "" {
			t.Errorf("reason %q has no fixed copy", r.Reason)
		}
		if r.SafeToRetry && (!o.MayRetry || r.RecordChanged != ChangedNo) {
			t.Errorf("reason %q is safe to retry with outcome %q and record_changed %q", r.Reason, r.Outcome, r.RecordChanged)
		}
		if got, ok := r.Reason.Info(); !ok || got != r {
			t.Errorf("Reason(%q).Info() = %v, %v", r.Reason, got, ok)
		}
	}
	if _, ok := Reason("maybe").Info(); ok {
		t.Error("a value outside the table has Info")
	}
}

// TestOutcomeTable checks the outcome table: four terminal outcomes and
// running, each once, each with copy, and every outcome the reason table
// uses.
func TestOutcomeTable(t *testing.T) {
	var terminal []Outcome
	seen := map[Outcome]bool{}
	for _, o := range Outcomes {
		if seen[o.Outcome] {
			t.Errorf("outcome %q listed twice", o.Outcome)
		}
		seen[o.Outcome] = true
		if !nameRule.MatchString(string(o.Outcome)) || o.Meaning == "" || o.SafeToRetry == "" || o.Next == "" {
			t.Errorf("outcome %q: bad name or missing copy", o.Outcome)
		}
		if o.Terminal {
			terminal = append(terminal, o.Outcome)
		}
	}
	if !slices.Equal(terminal, []Outcome{OutcomeDone, OutcomeNeedsReview, OutcomeNotSureIfSaved, OutcomeDidNotRun}) || OutcomeRunning.Terminal() {
		t.Errorf("terminal outcomes %v", terminal)
	}
	for _, o := range Outcomes {
		if !slices.ContainsFunc(Reasons, func(r ReasonInfo) bool { return r.Outcome == o.Outcome }) {
			t.Errorf("outcome %q has no reason", o.Outcome)
		}
	}
}

// TestNames checks the tool, argument, decision and closed-value names:
// each unique and each a name every MCP client accepts.
func TestNames(t *testing.T) {
	args := []string{ArgWorkflow, ArgInputs, ArgRequestID, ArgWaitSeconds, ArgRunID, ArgAttentionID, ArgDecision}
	for what, names := range map[string][]string{
		"tool": CoordinatorTools, "argument": args, "decision": Decisions,
		"proof": ProofValues, "record_changed": RecordChangedValues,
	} {
		if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
			t.Errorf("%s names are not unique: %v", what, names)
		}
		for _, n := range names {
			if !nameRule.MatchString(n) || !regexp.MustCompile(ToolNamePattern).MatchString(n) {
				t.Errorf("%s name %q does not match %s", what, n, nameRule)
			}
		}
	}
	if len(CoordinatorTools) != 6 {
		t.Errorf("CoordinatorTools = %v, want the six coordinator tools", CoordinatorTools)
	}
	if got := ToolName("records.note.append"); got != "records_note_append" || !regexp.MustCompile(ToolNamePattern).MatchString(got) {
		t.Errorf("ToolName = %q", got)
	}
	if WaitSecondsDefault <= 0 || WaitSecondsDefault > WaitSecondsMax {
		t.Errorf("wait limits %d/%d", WaitSecondsDefault, WaitSecondsMax)
	}
}

// TestValidNamesAgreeWithTheirPatterns: ValidToolName and ValidID, which
// check the length apart from the alphabet, accept exactly what the
// stated patterns (ToolNamePattern, IDPattern) accept, at and around
// each bound and for every byte.
func TestValidNamesAgreeWithTheirPatterns(t *testing.T) {
	cases := []struct {
		pattern string
		max     int
		valid   func(string) bool
	}{{ToolNamePattern, MaxToolName, ValidToolName}, {IDPattern, MaxID, ValidID}}
	for _, c := range cases {
		re := regexp.MustCompile(c.pattern)
		var inputs []string
		for _, n := range []int{0, 1, 2, c.max - 1, c.max, c.max + 1, 2 * c.max} {
			inputs = append(inputs, strings.Repeat("a", n), strings.Repeat("a", max(n-1, 0))+"!")
		}
		for b := range 256 {
			inputs = append(inputs, string(rune(b)), "a"+string([]byte{byte(b)})+"a")
		}
		for _, in := range inputs {
			if got, want := c.valid(in), re.MatchString(in); got != want {
				t.Errorf("%s: %q (%d bytes): valid %v, pattern %v", c.pattern, in, len(in), got, want)
			}
		}
	}
}
