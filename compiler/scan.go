package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/oa-dev/oa/ir"
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
	lines := fileLines{}
	c.scanValue(c.bundle, nil, false, lines)
	for _, d := range skills {
		for _, f := range ir.ScanText(d.Text, true) {
			line, col := lineCol(d.Text, f.Offset)
			c.refuseAt(f.Code, "", "rule: %s", f.Rule).At(fmt.Sprintf("%s:%d:%d", filepath.Join(c.dir, "skills", d.Name), line, col), "skills."+d.Name)
		}
	}
}

func (c *compilation) scanValue(v cue.Value, segs []string, prose bool, lines fileLines) {
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
			c.scanValue(it.Value(), here, proseFields[label], lines)
		}
	case cue.ListKind:
		it, err := v.List()
		if err != nil {
			return
		}
		for i := 0; it.Next(); i++ {
			c.scanValue(it.Value(), append(segs[:len(segs):len(segs)], fmt.Sprint(i)), prose, lines)
		}
	case cue.StringKind:
		s, err := v.String()
		if err != nil {
			return
		}
		pos := v.Pos()
		if w := c.raw.LookupPath(selectorPath(segs)); w.Exists() && w.Pos().IsValid() {
			pos = w.Pos() // where the bundle writes it, not where the schema types it
		}
		for _, f := range ir.ScanText(s, prose) {
			c.refuseAt(f.Code, bpath(segs...), "rule: %s", f.Rule).Pos = lines.locate(pos, s, f.Offset)
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

// fileLines caches the lines of bundle files to place a finding inside a
// multi-line string literal.
type fileLines map[string][]string

// locate returns file:line:col of byte offset inside the string value s
// whose literal starts at pos. For a single-line literal the column counts
// from after the opening quote; for a multi-line literal ("""), whose text
// starts on the next line, the column adds that line's indentation.
func (fl fileLines) locate(pos token.Pos, s string, offset int) string {
	if !pos.IsValid() {
		return ""
	}
	line, col := lineCol(s, offset)
	name := formatPos(pos)
	name = name[:strings.LastIndexByte(name[:strings.LastIndexByte(name, ':')], ':')]
	if !strings.Contains(s, "\n") {
		return fmt.Sprintf("%s:%d:%d", name, pos.Line(), pos.Column()+col)
	}
	fileLine := pos.Line() + line
	indent := 0
	if src := fl.lines(pos.Filename()); fileLine-1 < len(src) {
		indent = len(src[fileLine-1]) - len(strings.TrimLeft(src[fileLine-1], " \t"))
	}
	return fmt.Sprintf("%s:%d:%d", name, fileLine, indent+col)
}

func (fl fileLines) lines(file string) []string {
	if l, ok := fl[file]; ok {
		return l
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fl[file] = nil
		return nil
	}
	fl[file] = strings.Split(string(b), "\n")
	return fl[file]
}
