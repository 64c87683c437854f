package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// refuseCUE records every error in a CUE error list as a refusal with code.
func (c *compilation) refuseCUE(code blocking.Code, err error) {
	if l := cueRefusals(code, err, c.isBundleFile, c.locateCUEPath); l != nil {
		c.refused = append(c.refused, l.(blocking.List)...)
	}
}

func (c *compilation) isBundleFile(name string) bool {
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		return false
	}
	return strings.HasPrefix(name, abs+string(filepath.Separator)) || strings.HasPrefix(name, c.dir)
}

// cueRefusals converts CUE errors to refusals located at the first position
// in an input file (preferred, when inInput is set, over positions in the
// schemas). CUE's messages name fields and types, but for a conflict they
// quote the values, so values are redacted (see redactValues).
//
// When no position of an error lies in the input, fallback (if set) locates
// the error by its path; a disjunction error is replaced by the schema's
// alternatives, which say what would be accepted.
func cueRefusals(code blocking.Code, err error, inInput func(string) bool, fallback func(path []string) (pos, allowed string)) error {
	var l blocking.List
	seen := map[string]bool{}
	for _, e := range cueerrors.Errors(err) {
		pos := pickPos(cueerrors.Positions(e), inInput)
		path := cuePath(e.Path())
		format, args := e.Msg()
		msg := redactValues(fmt.Sprintf(format, args...))
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
			return formatPos(p)
		}
	}
	if len(positions) > 0 {
		return formatPos(positions[0])
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

// locateCUEPath locates an error path (as CUE gives it, led by the schema
// definition) in the bundle's own files, falling back to the first bundle
// file, and returns the schema's alternatives for the field when it is a
// choice between a few values.
func (c *compilation) locateCUEPath(cuePath []string) (pos, allowed string) {
	var segs []string
	for i, s := range cuePath {
		if i == 0 && strings.HasPrefix(s, "#") {
			continue
		}
		segs = append(segs, strings.Trim(s, `"`))
	}
	pos = c.posOf(segs)
	if pos == "" && len(c.files) > 0 {
		pos = displayName(c.files[0]) + ":1:1" // a missing field: the bundle's first file
	}
	if c.schema.Exists() {
		if v := c.schema.LookupPath(selectorPath(segs)); v.Exists() {
			if op, alts := v.Expr(); op == cue.OrOp && len(alts) <= 8 {
				parts := make([]string, len(alts))
				for i, a := range alts {
					parts[i] = fmt.Sprint(a)
				}
				allowed = strings.Join(parts, " | ")
			}
		}
	}
	return pos, allowed
}

// formatPos renders file:line:col with the file relative to the working
// directory when it is below it.
func formatPos(p token.Pos) string {
	if !p.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", displayName(p.Filename()), p.Line(), p.Column())
}

// displayName is a file name relative to the working directory when the
// file is below it, as the publisher typed it.
func displayName(name string) string {
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

// refuseAt records a refusal at a bundle path (segments as in ir.Problem),
// located at the position of that field in the bundle sources.
func (c *compilation) refuseAt(code blocking.Code, path string, format string, args ...any) *blocking.Error {
	e := blocking.New(code, format, args...)
	if path != "" {
		e.At(c.posOf(strings.Split(path, "\x00")), ir.JoinPath(strings.Split(path, "\x00")))
	}
	c.refused = append(c.refused, e)
	return e
}

// posOf returns the position of the deepest field along segs that the
// bundle itself writes; fields filled only by schema defaults fall back to
// their nearest written parent.
func (c *compilation) posOf(segs []string) string {
	if !c.raw.Exists() {
		return ""
	}
	for n := len(segs); n > 0; n-- {
		v := c.raw.LookupPath(selectorPath(segs[:n]))
		if p := v.Pos(); v.Exists() && p.IsValid() && c.isBundleFile(p.Filename()) {
			return formatPos(p)
		}
	}
	return ""
}

// selectorPath builds a cue.Path from segments: numbers are list indices,
// everything else a field label.
func selectorPath(segs []string) cue.Path {
	sels := make([]cue.Selector, len(segs))
	for i, s := range segs {
		if n, err := strconv.Atoi(s); err == nil && i > 0 {
			sels[i] = cue.Index(n)
		} else {
			sels[i] = cue.Str(s)
		}
	}
	return cue.MakePath(sels...)
}

// bpath joins bundle path segments for refuseAt.
func bpath(segs ...string) string { return strings.Join(segs, "\x00") }

// irToBundle names IR fields by their bundle names.
var irToBundle = map[string]string{
	"doneMeans":        "done_means",
	"arguments":        "args",
	"requiredEvidence": "evidence",
	"inputSchema":      "inputs",
	"maxRisk":          "max_risk",
	"requiredFeatures": "requires",
}

// bundlePath maps an IR problem path to the bundle field it came from.
// Indices into lists the compiler sorted (evidence, ceiling) are dropped,
// since they no longer match the source order.
func bundlePath(irPath []string) string {
	var out []string
	for i, seg := range irPath {
		if name, ok := irToBundle[seg]; ok {
			seg = name
		}
		if seg == "properties" || seg == "required" {
			continue
		}
		if _, err := strconv.Atoi(seg); err == nil && i > 0 && irPath[i-1] != "steps" {
			continue
		}
		out = append(out, seg)
	}
	return bpath(out...)
}

// schemaText is every schema source: a quoted string found in it is the
// schema's own rule (a pattern, an enum value) and is safe to show.
var schemaText = func() string {
	var b strings.Builder
	for _, f := range schemas.Worker {
		b.Write(f.Source)
	}
	return b.String()
}()

// redactValues redacts a CUE message (see blocking.Redact), keeping the
// quoted strings that come from the schemas: an input may hold a secret
// in a conflicting value, and a refusal never repeats what it refuses.
func redactValues(msg string) string {
	return blocking.Redact(msg, func(q string) bool {
		return len(q) > 2 && (strings.Contains(schemaText, q) || strings.Contains(schemaText, strings.Trim(q, `"`)))
	})
}

// CUERefusals converts CUE errors into refusals with code, each located at
// its first position in a file inInput accepts, with values redacted. It
// is how later stages report errors in their own CUE inputs (host policy,
// registries) the way the compiler reports bundles.
func CUERefusals(code blocking.Code, err error, inInput func(string) bool) error {
	return cueRefusals(code, err, inInput, nil)
}
