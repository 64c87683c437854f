// Package component builds, checks and evaluates the pure CUE components of
// a worker: the argument and predicate expressions of its steps.
//
// A component is one CUE file of package component whose field out holds
// the expression and whose fields input, steps and result are filled at run
// time with the job's inputs, the results of earlier steps and, for a
// check's predicate, what the check read back. A component may import only
// pure standard packages from an allow-list; anything under tool/ or that
// touches the outside world is refused before it is ever evaluated.
package component

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/oa-dev/oa/ir"
)

// Scope names the values in scope of every component.
const (
	FieldInput  = "input"
	FieldSteps  = "steps"
	FieldResult = "result"
	FieldOut    = "out"
)

// ExprError is an error inside an expression, located relative to the
// expression's own text (line 1 column 1 is its first character).
type ExprError struct {
	Line, Column int
	// Msg is CUE's message. It quotes the expression's own identifiers,
	// never runtime values.
	Msg string
}

func (e *ExprError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("at line %d column %d of the expression: %s", e.Line, e.Column, e.Msg)
}

// ImportError says a component imports a package outside the allow-list.
type ImportError struct{ Path string }

func (e *ImportError) Error() string {
	return fmt.Sprintf("package %q is not in the pure allow-list", e.Path)
}

// exprFile is the file name given to an expression while parsing it, so
// positions in errors can be told apart from the rest of the component.
const exprFile = "expr.cue"

// Source returns the CUE component file for one evaluator: a fixed
// preamble, the imports in sorted order and out set to expr. The same
// inputs always give the same bytes. It fails with an *ExprError when expr
// is not one CUE expression.
func Source(kind ir.EvaluatorKind, imports []string, expr string) (string, error) {
	x, err := parser.ParseExpr(exprFile, expr)
	if err != nil {
		return "", exprError(err, "")
	}
	file := &ast.File{}
	file.Decls = append(file.Decls, &ast.Package{Name: ast.NewIdent("component")})
	if len(imports) > 0 {
		sorted := append([]string(nil), imports...)
		sort.Strings(sorted)
		decl := &ast.ImportDecl{}
		for _, path := range sorted {
			decl.Specs = append(decl.Specs, ast.NewImport(nil, path))
		}
		file.Decls = append(file.Decls, decl)
	}
	for _, name := range []string{FieldInput, FieldSteps, FieldResult} {
		file.Decls = append(file.Decls, &ast.Field{Label: ast.NewIdent(name), Value: ast.NewIdent("_")})
	}
	// out is declared twice: first with the kind it must have, so that a
	// wrong kind is a conflict at compile time and at run time alike.
	file.Decls = append(file.Decls,
		&ast.Field{Label: ast.NewIdent(FieldOut), Value: kindConstraint(kind)},
		&ast.Field{Label: ast.NewIdent(FieldOut), Value: x})
	ast.AddComment(file.Decls[0], &ast.CommentGroup{Doc: true, List: []*ast.Comment{{Text: "// oa evaluator component: " + string(kind) + "."}}})
	b, err := format.Node(file)
	if err != nil {
		return "", fmt.Errorf("component: formatting: %w", err)
	}
	return string(b), nil
}

// Imports returns the import paths of a component source, in order.
func Imports(source string) ([]string, error) {
	f, err := parser.ParseFile("component.cue", source, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var paths []string
	for spec := range f.ImportSpecs() {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// CheckPure fails with an *ImportError when source imports anything not in
// allowed. Nothing is evaluated.
func CheckPure(source string, allowed []string) error {
	paths, err := Imports(source)
	if err != nil {
		return &ExprError{Msg: "component does not parse"}
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, p := range paths {
		if !ok[p] {
			return &ImportError{Path: p}
		}
	}
	return nil
}

// Scope is what a component may refer to when it is used by one step.
type Scope struct {
	// Inputs is the job's input schema.
	Inputs ir.InputSchema
	// Steps are the ids of the steps before this one.
	Steps []string
	// Result is true for a check's predicate, which sees what was read back.
	Result bool
	// TextSteps are the ids in Steps whose result is a text answer
	// (answer: text): {text: string, json?: _}, closed.
	TextSteps []string
	// TextResult is true when a check's predicate sees a text answer as
	// result.
	TextResult bool
}

// textAnswerType is the CUE type of a text answer: the text, and its JSON
// value when the text parses as JSON.
const textAnswerType = "close({text: string, json?: _})"

// Check compiles source and evaluates it against the types in scope,
// without concrete values: it fails with an *ExprError when the expression
// refers to anything not in scope, does not type-check, or yields the wrong
// kind (a struct for arguments, a bool for a predicate).
func Check(ctx *cue.Context, kind ir.EvaluatorKind, source string, scope Scope) error {
	return NewChecker(ctx).Check(kind, source, scope)
}

// Checker checks many components in one context, compiling each distinct
// source and scope once and remembering each result: a bundle's jobs often
// share evaluators and inputs.
type Checker struct {
	ctx     *cue.Context
	sources map[string]cue.Value
	scopes  map[string]cue.Value
	results map[string]error
}

// NewChecker returns a Checker that compiles in ctx.
func NewChecker(ctx *cue.Context) *Checker {
	return &Checker{ctx: ctx, sources: map[string]cue.Value{}, scopes: map[string]cue.Value{}, results: map[string]error{}}
}

// Check is the package-level Check, memoized.
func (c *Checker) Check(kind ir.EvaluatorKind, source string, scope Scope) error {
	types := scopeTypes(scope)
	key := string(kind) + "\x00" + source + "\x00" + types
	if err, done := c.results[key]; done {
		return err
	}
	err := c.check(source, types)
	c.results[key] = err
	return err
}

func (c *Checker) check(source, types string) error {
	v, ok := c.sources[source]
	if !ok {
		v = c.ctx.CompileString(source, cue.Filename("component.cue"))
		c.sources[source] = v
	}
	if err := v.Err(); err != nil {
		return exprError(err, source)
	}
	typed, ok := c.scopes[types]
	if !ok {
		typed = c.ctx.CompileString(types, cue.Filename("scope.cue"))
		c.scopes[types] = typed
	}
	if err := typed.Err(); err != nil {
		return fmt.Errorf("component: scope types: %w", err)
	}
	out := v.Unify(typed).LookupPath(cue.MakePath(cue.Str(FieldOut)))
	if err := out.Validate(cue.All()); err != nil {
		return exprError(err, source)
	}
	return nil
}

// kindConstraint is the CUE type an evaluator of kind must yield.
func kindConstraint(kind ir.EvaluatorKind) ast.Expr {
	if kind == ir.EvaluatorPredicate {
		return ast.NewIdent("bool")
	}
	return ast.NewStruct(&ast.Ellipsis{})
}

// scopeTypes renders the CUE that closes input, steps and result over what
// the step may see: input's declared fields with their types, the earlier
// steps' results as any value, and result only for a check's predicate.
func scopeTypes(scope Scope) string {
	var b strings.Builder
	b.WriteString("input: close({\n")
	names := make([]string, 0, len(scope.Inputs.Properties))
	for name := range scope.Inputs.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range scope.Inputs.Required {
		required[r] = true
	}
	for _, name := range names {
		opt := "?"
		if required[name] {
			opt = ""
		}
		fmt.Fprintf(&b, "\t%s%s: %s\n", strconv.Quote(name), opt, cueType(scope.Inputs.Properties[name]))
	}
	b.WriteString("})\nsteps: close({\n")
	for _, id := range scope.Steps {
		typ := "_"
		if slices.Contains(scope.TextSteps, id) {
			typ = textAnswerType
		}
		fmt.Fprintf(&b, "\t%s: %s\n", strconv.Quote(id), typ)
	}
	b.WriteString("})\n")
	switch {
	case !scope.Result:
		b.WriteString("result: close({})\n")
	case scope.TextResult:
		b.WriteString("result: " + textAnswerType + "\n")
	}
	return b.String()
}

func cueType(p ir.InputProperty) string {
	switch p.Type {
	case "string":
		if len(p.Enum) > 0 {
			alts := make([]string, len(p.Enum))
			for i, e := range p.Enum {
				alts[i] = strconv.Quote(e)
			}
			return strings.Join(alts, " | ")
		}
		return "string"
	case "integer":
		return "int"
	case "number":
		return "number"
	case "boolean":
		return "bool"
	}
	return "_|_"
}

// exprError converts a CUE error to an *ExprError located inside the
// expression when CUE gives a position there. source is the component file
// the error came from, or "" when it came from parsing the bare expression.
func exprError(err error, source string) *ExprError {
	errs := errors.Errors(err)
	if len(errs) == 0 {
		return &ExprError{Msg: err.Error()}
	}
	first := errs[0]
	format, args := first.Msg()
	e := &ExprError{Msg: fmt.Sprintf(format, args...)}
	for _, pos := range errors.Positions(first) {
		if pos.Filename() == exprFile || pos.Filename() == "component.cue" {
			e.Line, e.Column = exprPosition(pos, source)
			break
		}
	}
	return e
}

// exprPosition maps a position in the parsed expression or in the component
// file back to the expression's own line and column. In the component file
// the expression starts after "out: " on the last line that begins so; the
// formatter may re-indent later lines, so their columns are approximate.
func exprPosition(pos token.Pos, source string) (int, int) {
	if pos.Filename() == exprFile {
		return pos.Line(), pos.Column()
	}
	prefix := FieldOut + ": "
	outLine := 1 + strings.Count(source[:strings.LastIndex(source, "\n"+prefix)+1], "\n")
	line := pos.Line() - outLine + 1
	if line < 1 {
		return 0, 0
	}
	if line == 1 {
		return 1, pos.Column() - len(prefix)
	}
	return line, pos.Column()
}

// Use is one use of an evaluator by a step, with the scope it sees there.
type Use struct {
	Job       string
	Step      int
	Evaluator string
	// Kind is the kind the step needs: arguments for args, predicate for
	// a predicate.
	Kind  ir.EvaluatorKind
	Scope Scope
}

// Uses lists every evaluator use in w's jobs, in job and step order. A
// step sees the inputs, the results of the read, effect and check steps
// before it (a guard yields no result; a step with answer text yields
// {text, json?}) and, in a check's predicate, what the check read back.
func Uses(w *ir.Worker) []Use {
	var uses []Use
	for _, j := range w.Jobs {
		var earlier, text []string
		for i, s := range j.Steps {
			scope := Scope{Inputs: j.InputSchema, Steps: slices.Clone(earlier), TextSteps: slices.Clone(text)}
			if s.Arguments != "" {
				uses = append(uses, Use{j.Name, i, s.Arguments, ir.EvaluatorArguments, scope})
			}
			if s.Predicate != "" {
				scope.Result = s.Kind == ir.StepCheck
				scope.TextResult = scope.Result && s.Answer == ir.AnswerText
				uses = append(uses, Use{j.Name, i, s.Predicate, ir.EvaluatorPredicate, scope})
			}
			if s.Kind != ir.StepGuard {
				earlier = append(earlier, s.ID)
			}
			if s.Answer == ir.AnswerText {
				text = append(text, s.ID)
			}
		}
	}
	return uses
}
