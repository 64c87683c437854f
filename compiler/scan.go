package compiler

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"

	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// proseFields are the bundle fields written for people, where runs of five
// or more digits are refused as well as the other shapes.
var proseFields = map[string]bool{
	"responsibility": true, "description": true, "purpose": true, "done_means": true, "persona": true,
}

// scanBundle refuses customer state anywhere in the bundle: every string
// value and every field name of the unified bundle, and the skill docs.
// Refusals name the rule and the place, never the value.
func (c *compilation) scanBundle(_ bundleSource, skills []ir.Document) {
	c.scanValue(c.bundle, nil, false)
	for _, d := range skills {
		for _, f := range ir.ScanText(d.Text, true) {
			line, col := lineCol(d.Text, f.Offset)
			c.refuseAt(f.Code, "", "rule: %s", f.Rule).At(fmt.Sprintf("%s:%d:%d", filepath.Join(c.dir, "skills", d.Name), line, col), "skills."+d.Name)
		}
	}
}

func (c *compilation) scanValue(v cue.Value, segs []string, prose bool) {
	switch v.IncompleteKind() {
	case cue.StructKind:
		it, err := v.Fields()
		if err != nil {
			return
		}
		for it.Next() {
			label := it.Selector().Unquoted()
			here := append(segs[:len(segs):len(segs)], label)
			if f, bad := ir.ScanName(label); bad {
				c.refuseAt(f.Code, bpath(here...), "rule: %s", f.Rule)
			}
			c.scanValue(it.Value(), here, proseFields[label])
		}
	case cue.ListKind:
		it, err := v.List()
		if err != nil {
			return
		}
		for i := 0; it.Next(); i++ {
			c.scanValue(it.Value(), append(segs[:len(segs):len(segs)], fmt.Sprint(i)), prose)
		}
	case cue.StringKind:
		s, err := v.String()
		if err != nil {
			return
		}
		findings := ir.ScanText(s, prose)
		if len(findings) == 0 {
			return
		}
		lit := literalOf(c.raw.LookupPath(selectorPath(segs)))
		for _, f := range findings {
			e := c.refuseAt(f.Code, bpath(segs...), "rule: %s", f.Rule)
			if lit != nil {
				e.Pos = locate(lit, s, f.Offset)
			}
		}
	}
}

// lineCol returns the 1-based line and column (in runes) of offset in text.
func lineCol(text string, offset int) (int, int) {
	before := text[:offset]
	line := 1 + strings.Count(before, "\n")
	col := 1 + utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])
	return line, col
}

// literalOf returns the string literal the bundle writes for v, if v is a
// field with a literal value (a string from a default or an expression has
// none, and its refusal is located at the field).
func literalOf(v cue.Value) *ast.BasicLit {
	if !v.Exists() {
		return nil
	}
	switch n := v.Source().(type) {
	case *ast.Field:
		lit, _ := n.Value.(*ast.BasicLit)
		return lit
	case *ast.BasicLit:
		return n
	}
	return nil
}

// locate returns file:line:col of byte offset inside the string value s
// written as lit. In a single-line literal the column counts from after the
// opening quote (and any #); in a multi-line literal (""") the text starts
// on the next line, and CUE strips from every line the indentation of the
// closing quotes, which is added back.
func locate(lit *ast.BasicLit, s string, offset int) string {
	pos := lit.Pos()
	line, col := lineCol(s, offset)
	file := schemas.DisplayName(pos.Filename())
	body := strings.TrimLeft(lit.Value, "#")
	if !strings.HasPrefix(body, `"""`) {
		opening := len(lit.Value) - len(body) + 1
		return fmt.Sprintf("%s:%d:%d", file, pos.Line(), pos.Column()+opening+col-1)
	}
	last := lit.Value[strings.LastIndexByte(lit.Value, '\n')+1:]
	indent := len(last) - len(strings.TrimLeft(last, " \t"))
	return fmt.Sprintf("%s:%d:%d", file, pos.Line()+line, indent+col)
}
