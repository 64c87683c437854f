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
)

// refuseCUE records every error in a CUE error list as a refusal with code.
func (c *compilation) refuseCUE(code blocking.Code, err error) {
	if l := cueRefusals(code, err, c.isBundleFile); l != nil {
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
// schemas). CUE's messages name fields and types; for a conflict with a
// concrete value they quote it, which is the publisher's own package text.
func cueRefusals(code blocking.Code, err error, inInput func(string) bool) error {
	var l blocking.List
	seen := map[string]bool{}
	for _, e := range cueerrors.Errors(err) {
		pos := pickPos(cueerrors.Positions(e), inInput)
		path := cuePath(e.Path())
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		key := pos + path + msg
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

// formatPos renders file:line:col with the file relative to the working
// directory when it is below it.
func formatPos(p token.Pos) string {
	if !p.IsValid() {
		return ""
	}
	name := p.Filename()
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
	}
	return fmt.Sprintf("%s:%d:%d", name, p.Line(), p.Column())
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
