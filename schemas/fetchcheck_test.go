package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

const (
	ociPath     = "github.com/oa-dev/oa/oci"
	schemasPath = "github.com/oa-dev/oa/schemas"
)

// TestEveryFetchChecksTheSchema: oci.Fetch and oci.FetchBound take the IR
// check as an argument (so that oci loads no CUE), which a caller could
// weaken. Every call in the module's program code passes
// schemas.CheckFetchedIR itself, and none takes the fetch as a value to
// call elsewhere, so every release a host reads is held to #Worker. Tests
// may pass other checks: oci's own test what a fetch does with them.
func TestEveryFetchChecksTheSchema(t *testing.T) {
	fset := token.NewFileSet()
	calls := 0
	eachProgramFile(t, fset, func(_ string, f *ast.File) {
		for _, bad := range uncheckedFetches(f, &calls) {
			t.Errorf("%s: %s", fset.Position(bad.pos), bad.why)
		}
	})
	if calls < 5 {
		t.Fatalf("found %d calls of oci.Fetch or oci.FetchBound: is the walk looking at the module?", calls)
	}
}

// uncheckedFetch is one use of oci.Fetch or oci.FetchBound that does not
// pass schemas.CheckFetchedIR, and why.
type uncheckedFetch struct {
	pos token.Pos
	why string
}

// uncheckedFetches returns f's uses of oci.Fetch and oci.FetchBound that
// do not call them with schemas.CheckFetchedIR, counting the calls.
func uncheckedFetches(f *ast.File, calls *int) []uncheckedFetch {
	ociName, schemasName := importName(f, ociPath), importName(f, schemasPath)
	if ociName == "" {
		return nil
	}
	called := map[*ast.SelectorExpr]bool{}
	var bad []uncheckedFetch
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !isFetch(sel, ociName) {
			return true
		}
		called[sel] = true
		*calls++
		if len(call.Args) == 0 || !isSelector(call.Args[len(call.Args)-1], schemasName, "CheckFetchedIR") {
			bad = append(bad, uncheckedFetch{call.Pos(), "oci." + sel.Sel.Name + " must be passed schemas.CheckFetchedIR"})
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isFetch(sel, ociName) && !called[sel] {
			bad = append(bad, uncheckedFetch{sel.Pos(), "oci." + sel.Sel.Name + " is taken as a value: call it with schemas.CheckFetchedIR"})
		}
		return true
	})
	return bad
}

// isFetch reports whether sel names oci.Fetch or oci.FetchBound, oci
// being imported as ociName.
func isFetch(sel *ast.SelectorExpr, ociName string) bool {
	return isSelector(sel, ociName, "Fetch") || isSelector(sel, ociName, "FetchBound")
}

// isSelector reports whether e is pkg.name.
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || pkg == "" || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// importName is the name f refers to the package at path by, or "".
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

// TestUncheckedFetchesAreFound: the scan finds a fetch passed another
// check, one passed none and one taken as a value, under any import name,
// and accepts a fetch passed schemas.CheckFetchedIR.
func TestUncheckedFetchesAreFound(t *testing.T) {
	const src = `package p

import (
	o "github.com/oa-dev/oa/oci"
	s "github.com/oa-dev/oa/schemas"
	"github.com/oa-dev/oa/ir"
)

func lax(b []byte) (*ir.Worker, error) { return ir.Decode(b) }

func f() {
	o.Fetch(ctx, target, desc, s.CheckFetchedIR)
	o.FetchBound(ctx, target, desc, s.CheckFetchedIR)
	o.Fetch(ctx, target, desc, lax)
	o.FetchBound(ctx, target, desc, nil)
	fetch := o.Fetch
	_ = fetch
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	bad := uncheckedFetches(f, &calls)
	if calls != 4 || len(bad) != 3 {
		t.Fatalf("found %d calls and %d unchecked uses %v; want 4 and 3", calls, len(bad), bad)
	}
}
