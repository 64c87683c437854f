package schemas

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
)

// Fallback locates a CUE error by its path (as CUE gives it, led by the
// schema definition) when none of its positions lies in the input, and
// returns the schema's alternatives for the field when it is a choice
// between a few values ("" otherwise).
type Fallback func(path []string) (pos, allowed string)

// CUERefusals converts CUE errors into refusals with code, each located at
// its first position in a file inInput accepts (preferred, when inInput is
// set, over positions in the schemas). CUE's messages name fields and
// types, but for a conflict they quote the values, so values are redacted
// (see RedactValues). It is how every stage reports errors in its CUE
// inputs: the compiler its bundles, the host stages their policy,
// registry and fleet files.
//
// When no position of an error lies in the input, fallback (if set)
// locates the error by its path; a disjunction error is replaced by the
// schema's alternatives, which say what would be accepted.
func CUERefusals(code blocking.Code, err error, inInput func(string) bool, fallback Fallback) error {
	var l blocking.List
	seen := map[string]bool{}
	for _, e := range cueerrors.Errors(err) {
		pos := pickPos(cueerrors.Positions(e), inInput)
		path := cuePath(e.Path())
		format, args := e.Msg()
		msg := RedactValues(fmt.Sprintf(format, args...))
		if fallback != nil {
			where, allowed := fallback(e.Path())
			if pos == "" || !inInput(posFile(pos)) {
				pos = where
			}
			if strings.Contains(msg, "empty disjunction") && allowed != "" {
				msg = "must be one of " + allowed
			}
		}
		if strings.Contains(msg, "empty disjunction") {
			msg = "the value is none of the alternatives the schema allows here"
		}
		// One refusal per place: a value refused by a disjunction gets an
		// error from every alternative, which says less, not more.
		key := pos + path
		if seen[key] {
			continue
		}
		seen[key] = true
		l = append(l, blocking.New(code, "%s", msg).At(pos, path))
	}
	return l.Err()
}

func pickPos(positions []token.Pos, inInput func(string) bool) string {
	for _, p := range positions {
		if inInput == nil || inInput(p.Filename()) {
			return FormatPos(p)
		}
	}
	if len(positions) > 0 {
		return FormatPos(positions[0])
	}
	return ""
}

// posFile returns the file of a file:line:col position.
func posFile(pos string) string {
	for range 2 {
		if i := strings.LastIndexByte(pos, ':'); i >= 0 {
			pos = pos[:i]
		}
	}
	abs, err := filepath.Abs(pos)
	if err != nil {
		return pos
	}
	return abs
}

// FormatPos renders file:line:col with the file relative to the working
// directory when it is below it ("" for an invalid position).
func FormatPos(p token.Pos) string {
	if !p.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", DisplayName(p.Filename()), p.Line(), p.Column())
}

// DisplayName is a file name relative to the working directory when the
// file is below it, as the operator or publisher typed it.
func DisplayName(name string) string {
	if wd, err := os.Getwd(); err == nil {
		if abs, err := filepath.Abs(name); err == nil {
			if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
				return rel
			}
		}
	}
	return name
}

// cuePath renders a CUE error path in the dotted form of ir.JoinPath.
func cuePath(path []string) string {
	segs := make([]string, 0, len(path))
	for i, s := range path {
		if i == 0 && strings.HasPrefix(s, "#") {
			continue // the schema definition the input was unified with
		}
		segs = append(segs, strings.Trim(s, `"`))
	}
	return ir.JoinPath(segs)
}

// schemaText is every worker schema source: a quoted string found in it is
// the schema's own rule (a pattern, an enum value) and is safe to show.
var schemaText = func() string {
	var b strings.Builder
	for _, f := range Worker {
		b.Write(f.Source)
	}
	return b.String()
}()

// RedactValues redacts a CUE message (see blocking.Redact), keeping the
// quoted strings that come from the worker schema: an input may hold a
// secret in a conflicting value, and a refusal never repeats what it
// refuses.
func RedactValues(msg string) string {
	return blocking.Redact(msg, func(q string) bool {
		return len(q) > 2 && (strings.Contains(schemaText, q) || strings.Contains(schemaText, strings.Trim(q, `"`)))
	})
}
