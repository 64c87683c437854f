package compiler

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// refuseCUE records every error in a CUE error list as a refusal with code.
func (c *compilation) refuseCUE(code blocking.Code, err error) {
	if l := schemas.CUERefusals(code, err, c.isBundleFile, c.locateCUEPath); l != nil {
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
		pos = schemas.DisplayName(c.files[0]) + ":1:1" // a missing field: the bundle's first file
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
			return schemas.FormatPos(p)
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
	"skippableWhile":   "skippable_while",
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
