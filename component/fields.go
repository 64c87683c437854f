package component

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
)

// ArgumentField is one field an arguments evaluator yields, as far as its
// types tell without concrete values.
type ArgumentField struct {
	Name string
	// Kind is the field's possible kinds (cue.TopKind when anything).
	Kind cue.Kind
	// Optional is true for a field the expression may leave out.
	Optional bool
}

// ArgumentFields returns the fields an arguments evaluator's source
// yields in scope, by name, with their kinds; open is true when the
// struct may hold fields beyond them (the expression does not say which,
// so none can be checked as missing or extra). A source that does not
// check is the error Check gives.
func (c *Checker) ArgumentFields(source string, scope Scope) (fields []ArgumentField, open bool, err error) {
	types := scopeTypes(scope)
	if err := c.check(source, types); err != nil {
		return nil, false, err
	}
	out := c.sources[source].Unify(c.scopes[types]).LookupPath(cue.MakePath(cue.Str(FieldOut)))
	it, err := out.Fields(cue.Optional(true))
	if err != nil {
		return nil, false, err
	}
	for it.Next() {
		sel := it.Selector()
		if !sel.IsString() {
			continue
		}
		fields = append(fields, ArgumentField{Name: sel.Unquoted(), Kind: it.Value().IncompleteKind(), Optional: it.IsOptional()})
	}
	return fields, !literalStruct(source), nil
}

// literalStruct reports whether the source's out expression (its last out
// field) is a struct literal of plain fields: no embedding, comprehension
// or computed label, so its fields are exactly those it names.
func literalStruct(source string) bool {
	f, err := parser.ParseFile("component.cue", source)
	if err != nil {
		return false
	}
	var last ast.Expr
	for _, d := range f.Decls {
		if field, ok := d.(*ast.Field); ok {
			if name, _, _ := ast.LabelName(field.Label); name == FieldOut {
				last = field.Value
			}
		}
	}
	lit, ok := last.(*ast.StructLit)
	if !ok {
		return false
	}
	for _, e := range lit.Elts {
		field, ok := e.(*ast.Field)
		if !ok {
			return false
		}
		if _, _, err := ast.LabelName(field.Label); err != nil {
			return false
		}
	}
	return true
}
