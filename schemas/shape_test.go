package schemas

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"testing"
)

// maxMethods is how many methods one type may declare: a type with more
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
// no type declares more than maxMethods methods and no function returns
// more than maxResults values, in the module's non-test Go files.
func TestTypesAndFunctionsStaySmall(t *testing.T) {
	methods := map[string]int{}
	fset := token.NewFileSet()
	eachProgramFile(t, fset, func(path string, f *ast.File) {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			if n := countResults(fn.Type.Results); n > maxResults && !externalSignatures[filepath.ToSlash(rel)+"."+fn.Name.Name] {
				t.Errorf("%s: %s returns %d values; return a struct whose fields name them (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, n, maxResults)
			}
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				methods[filepath.Dir(path)+"."+receiverName(fn.Recv.List[0].Type)]++
			}
		}
	})
	if len(methods) < 50 {
		t.Fatalf("found methods on only %d types: is the walk looking at the module?", len(methods))
	}
	var types []string
	for typ := range methods {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		if methods[typ] > maxMethods {
			t.Errorf("%s declares %d methods (at most %d): split what it holds by job", typ, methods[typ], maxMethods)
		}
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
