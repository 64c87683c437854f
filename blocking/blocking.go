// Package blocking is the closed catalogue of blocking states: every refusal
// oa makes has a stable code, the stage that raises it, and fixed operator
// copy that says how to resolve it. `oa explain CODE` prints an entry.
//
// A refusal is an *Error (or a List of them). Its text is built from the
// catalogue and from locations and rule names only; callers must never put
// an observed value, a secret, an input or a local path into Detail.
package blocking

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Code is a stable blocking code such as "bundle_schema_violation".
type Code string

// Stage is the pipeline stage that raises a code.
type Stage string

// Stages of the pipeline.
const (
	StageCompile     Stage = "compile"
	StageOCI         Stage = "oci"
	StageAdmit       Stage = "admit"
	StageHarness     Stage = "harness"
	StageResolve     Stage = "resolve"
	StageBind        Stage = "bind"
	StageCoordinator Stage = "coordinator"
)

// Entry is one catalogue entry.
type Entry struct {
	Code  Code   `json:"code"`
	Stage Stage  `json:"stage"`
	Title string `json:"title"`
	// Copy is the fixed operator copy: what the refusal means and how to
	// resolve it.
	Copy string `json:"copy"`
}

var catalogue = map[Code]Entry{}

// register adds entries to the catalogue; a code registered twice is a
// program fault found at start-up.
func register(entries ...Entry) {
	for _, e := range entries {
		if _, dup := catalogue[e.Code]; dup {
			panic("blocking: code registered twice: " + string(e.Code))
		}
		catalogue[e.Code] = e
	}
}

// Lookup returns the catalogue entry for code.
func Lookup(code Code) (Entry, bool) {
	e, ok := catalogue[code]
	return e, ok
}

// All returns every entry, ordered by stage then code.
func All() []Entry {
	out := make([]Entry, 0, len(catalogue))
	for _, e := range catalogue {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Stage != out[j].Stage {
			return stageOrder(out[i].Stage) < stageOrder(out[j].Stage)
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// stages is the order All lists stages in: the order of the pipeline,
// then fleet provisioning, which drives admit, resolve and bind on a host.
var stages = []Stage{StageCompile, StageOCI, StageAdmit, StageHarness, StageResolve, StageBind, StageCoordinator, StageFleet}

func stageOrder(s Stage) int {
	if i := slices.Index(stages, s); i >= 0 {
		return i
	}
	return len(stages)
}

// Error is one refusal.
type Error struct {
	Code Code `json:"code"`
	// Pos is "file:line:col" where the refused input is, when known.
	Pos string `json:"pos,omitempty"`
	// Path is the field path inside the input, such as jobs.triage.steps[1].
	Path string `json:"path,omitempty"`
	// Detail names the rule that failed. It never carries a value.
	Detail string `json:"detail,omitempty"`
	// Cause is the error the refusal was made from, if any: kept for the
	// operator's log and errors.Is/As (Unwrap), never encoded and never
	// part of what an agent is shown.
	Cause error `json:"-"`
}

// New returns a refusal with code. Detail is formatted from format and args,
// which must be rule names, field names or counts, never observed values.
// The first argument that is an error becomes the refusal's Cause.
func New(code Code, format string, args ...any) *Error {
	if _, ok := catalogue[code]; !ok {
		panic("blocking: unknown code " + string(code))
	}
	e := &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if cause, ok := a.(error); ok {
			e.Cause = cause
			break
		}
	}
	return e
}

// Unwrap returns the error the refusal was made from, or nil.
func (e *Error) Unwrap() error { return e.Cause }

// At returns e located at pos and path.
func (e *Error) At(pos, path string) *Error {
	e.Pos, e.Path = pos, path
	return e
}

// Entry returns the catalogue entry of e's code.
func (e *Error) Entry() Entry { return catalogue[e.Code] }

// Error renders "pos: path: title: detail [code]" followed by the fix.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos != "" {
		b.WriteString(e.Pos)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	entry := e.Entry()
	b.WriteString(entry.Title)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	fmt.Fprintf(&b, " [%s]\n\tfix: %s", e.Code, entry.Copy)
	return b.String()
}

// List is several refusals found in one pass, in input order.
type List []*Error

// Error renders one refusal per paragraph.
func (l List) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Err returns l as an error, or nil when l is empty.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Refusals returns the refusals inside err: every *Error in a List or in
// err's chain. It returns nil when err is not a refusal (a program fault).
func Refusals(err error) List {
	// The outermost refusal wins: a refusal made from another one (its
	// Cause) is that refusal, not the one inside it.
	for err != nil {
		switch e := err.(type) {
		case List:
			return e
		case *Error:
			return List{e}
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if l := Refusals(inner); l != nil {
					return l
				}
			}
			return nil
		}
		err = errors.Unwrap(err)
	}
	return nil
}

// Has reports whether err holds a refusal with any of codes, alone or in
// a List.
func Has(err error, codes ...Code) bool {
	for _, r := range Refusals(err) {
		if slices.Contains(codes, r.Code) {
			return true
		}
	}
	return false
}

// ExitStatus is the process exit status for err: 0 for nil, 2 for a
// refusal, 1 for anything else (a program fault).
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case Refusals(err) != nil:
		return 2
	default:
		return 1
	}
}

var (
	quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	longDigits = regexp.MustCompile(`\d{5,}`)
)

// Redact replaces every double-quoted string and every run of five or more
// digits in msg with "…", except quoted strings keep reports true for.
// Library messages (encoding/json, CUE, oras) quote what they reject; a
// refusal built from one must not repeat an input's value.
func Redact(msg string, keep func(quoted string) bool) string {
	msg = quotedText.ReplaceAllStringFunc(msg, func(q string) string {
		if keep != nil && keep(q) {
			return q
		}
		return `"…"`
	})
	return longDigits.ReplaceAllString(msg, "…")
}
