package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"testing"
)

// maxMethods is how many methods one type may have: a type with more
// holds more than one job (issue 42 found *Coordinator with 87 and the
// ledger with 54), and splitting it is cheaper the earlier it is done.
const maxMethods = 40

// maxResults is how many values one function may return before they
// become a struct whose fields name them.
const maxResults = 3

// externalSignatures are methods whose results an interface outside the
// module fixes: the OAuth test server's storage implements zitadel's
// op.Storage.
var externalSignatures = map[string]bool{
	"testkit/oauthtest.CreateAccessAndRefreshTokens": true,
}

// TestTypesAndFunctionsStaySmall holds the shape issue 42 gave the code:
// no type has more than maxMethods methods and no function returns more
// than maxResults values, in the module's non-test Go files. A type's
// methods are its method set as embedding makes it: those it declares and
// those its embedded same-package types promote (issue 42 found
// *Coordinator declaring 8 but embedding its parts, 98 in all), so that
// embedding cannot hide a type's size.
func TestTypesAndFunctionsStaySmall(t *testing.T) {
	types := newTypeShapes()
	fset := token.NewFileSet()
	eachProgramFile(t, fset, func(path string, f *ast.File) {
		rel, _ := filepath.Rel("..", filepath.Dir(path))
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				if n := countResults(fn.Type.Results); n > maxResults && !externalSignatures[filepath.ToSlash(rel)+"."+fn.Name.Name] {
					t.Errorf("%s: %s returns %d values; return a struct whose fields name them (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, n, maxResults)
				}
			}
		}
		types.add(filepath.Dir(path), f)
	})
	if len(types.declared) < 50 {
		t.Fatalf("found only %d types: is the walk looking at the module?", len(types.declared))
	}
	for _, typ := range types.names() {
		if n := types.methodCount(typ); n > maxMethods {
			t.Errorf("%s has %d methods, its own and those its embedded types promote (at most %d): split what it holds by job, and name the parts instead of embedding them", typ, n, maxMethods)
		}
	}
}

// TestMethodCountHoldsWhatEmbeddingPromotes holds the count to a method
// set: an embedded same-package type's methods count once, behind a
// pointer or not, generic or not, through every level of embedding; a
// method the outer type declares shadows the one it would promote, and
// another package's embedded type is not counted.
func TestMethodCountHoldsWhatEmbeddingPromotes(t *testing.T) {
	const src = `package p
type base struct{}
func (base) a() {}
func (*base) b() {}
type mid[T any] struct{ *base }
func (mid[T]) c() {}
func (mid[T]) a() {}
type top struct {
	mid[int]
	other.T
	named *base
}
func (*top) d() {}
type alone struct{ n int }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	types := newTypeShapes()
	types.add("p", f)
	want := map[string]int{"p.base": 2, "p.mid": 3, "p.top": 4, "p.alone": 0}
	for typ, n := range want {
		if got := types.methodCount(typ); got != n {
			t.Errorf("%s: %d methods, want %d", typ, got, n)
		}
	}
	if got := types.names(); len(got) != len(want) {
		t.Errorf("types %v, want the %d declared", got, len(want))
	}
}

// typeShapes holds, per type ("dir.Name"), the names of the methods it
// declares and the same-package types it embeds, across a package's files.
type typeShapes struct {
	declared map[string]map[string]bool
	embeds   map[string][]string
}

func newTypeShapes() *typeShapes {
	return &typeShapes{declared: map[string]map[string]bool{}, embeds: map[string][]string{}}
}

// add records f's methods and its struct types' embedded fields; pkg (the
// file's directory) scopes the names to their package.
func (ts *typeShapes) add(pkg string, f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv != nil && len(decl.Recv.List) == 1 {
				ts.declare(pkg + "." + receiverName(decl.Recv.List[0].Type))[decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				if spec, ok := spec.(*ast.TypeSpec); ok {
					ts.addType(pkg, spec)
				}
			}
		}
	}
}

// addType records a struct type and the same-package types it embeds.
func (ts *typeShapes) addType(pkg string, spec *ast.TypeSpec) {
	st, ok := spec.Type.(*ast.StructType)
	if !ok {
		return
	}
	typ := pkg + "." + spec.Name.Name
	ts.declare(typ)
	for _, field := range st.Fields.List {
		// An embedded field has no names; receiverName gives "?" for a
		// selector (another package's type), which is not counted.
		if name := receiverName(field.Type); len(field.Names) == 0 && name != "?" {
			ts.embeds[typ] = append(ts.embeds[typ], pkg+"."+name)
		}
	}
}

func (ts *typeShapes) declare(typ string) map[string]bool {
	if ts.declared[typ] == nil {
		ts.declared[typ] = map[string]bool{}
	}
	return ts.declared[typ]
}

// names are the types seen, sorted.
func (ts *typeShapes) names() []string {
	var types []string
	for typ := range ts.declared {
		types = append(types, typ)
	}
	sort.Strings(types)
	return types
}

// methodCount is how many methods typ has with what its embedded types
// promote: the names it declares and, recursively, those of each embedded
// same-package type (a name counts once, as in a method set).
func (ts *typeShapes) methodCount(typ string) int {
	names := map[string]bool{}
	ts.collect(typ, names, map[string]bool{})
	return len(names)
}

func (ts *typeShapes) collect(typ string, names, visited map[string]bool) {
	if visited[typ] {
		return
	}
	visited[typ] = true
	for name := range ts.declared[typ] {
		names[name] = true
	}
	for _, embedded := range ts.embeds[typ] {
		ts.collect(embedded, names, visited)
	}
}

func countResults(results *ast.FieldList) int {
	if results == nil {
		return 0
	}
	n := 0
	for _, f := range results.List {
		n += max(1, len(f.Names))
	}
	return n
}

func receiverName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverName(e.X)
	case *ast.IndexExpr:
		return receiverName(e.X)
	case *ast.IndexListExpr:
		return receiverName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
