package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// snakeCaseTypes are the types whose JSON names are snake_case, by folder
// and type: what an agent sees over MCP (the coordinator's results and
// arguments, attention items and questions, the contract's copy), the
// files a person writes in CUE (host policy, fleet file, bundle source)
// and the ledger's own run record. Every other type of oa names its JSON
// in camelCase: the records oa signs and the --json output (DESIGN.md,
// "JSON names").
var snakeCaseTypes = map[string]bool{
	// The MCP face.
	"contract.OutcomeInfo": true, "contract.ReasonInfo": true,
	"coordinator.WorkflowCard": true, "coordinator.RunRequest": true, "coordinator.ReadResult": true,
	"coordinator.Result": true, "coordinator.Notice": true,
	"coordinator/mcpserve.questionState": true, "coordinator/mcpserve.runArgs": true,
	"coordinator/mcpserve.approvalState": true, "coordinator/mcpserve.getRunArgs": true,
	"coordinator/mcpserve.attentionArgs": true, "coordinator/mcpserve.decided": true,
	"coordinator/mcpserve.readOut": true,
	"coordinator/attention.Item":   true, "coordinator/attention.Stored": true,
	"coordinator/attention.ProposedChange": true, "coordinator/attention.QuestionShown": true,
	"coordinator/attention.Shown": true,
	// What a person writes in CUE.
	"compiler.jobSource": true, "compiler.inputSource": true, "compiler.stepSource": true,
	"compiler.outcomeSource": true, "compiler.ceilingSource": true,
	"host.Person": true, "host.Policy": true, "host.FleetTrust": true, "host.TrustedKey": true,
	"host.AttestationRule": true, "host.Ceiling": true, "host.ConfinementPolicy": true,
	"host.Limits": true, "host.Witnessing": true,
	"fleet.Ceiling": true, "fleet.CeilingPublisher": true, "signing.Identity": true,
	// The ledger's run record, and the transcript's reading of it.
	"ledger.RunRecord": true, "harness.runDoc": true,
}

// foreignTypes spell the names of a format oa does not own, as its
// standard or program does; their casing is not oa's to pick.
var foreignTypes = map[string]bool{
	"signing.inTotoStatement": true, // in-toto: _type, predicateType
	"signing.ggcrRootFS":      true, // OCI image config: diff_ids
	"harness.rawServer":       true, // MCP clients' config files: serverUrl, http_headers
}

// TestOneJSONCasingPerFamily: a type's JSON names are all snake_case (the
// families in snakeCaseTypes) or all camelCase (the rest), so no record
// family mixes the two; and the plan's digest has one name, planDigest
// (plan_digest only in the snake_case run record), never
// capabilityPlanDigest.
func TestOneJSONCasingPerFamily(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testkit" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if strings.Contains(n.Value, "capabilityPlanDigest") {
					t.Errorf("%s: the plan digest is planDigest, not capabilityPlanDigest", path)
				}
			case *ast.TypeSpec:
				name := dir + "." + n.Name.Name
				seen[name] = true
				if !foreignTypes[name] {
					checkCasing(t, name, jsonNames(n.Type), snakeCaseTypes[name])
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range snakeCaseTypes {
		if !seen[name] {
			t.Errorf("%s is listed in snakeCaseTypes but no longer exists: take it out (or name where it went)", name)
		}
	}
}

// jsonNames lists the JSON names of the struct fields declared in typ
// (its own and those of struct types written inside it).
func jsonNames(typ ast.Expr) []string {
	var names []string
	ast.Inspect(typ, func(n ast.Node) bool {
		if f, ok := n.(*ast.Field); ok && f.Tag != nil {
			tag, _ := strconv.Unquote(f.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name != "" && name != "-" {
				names = append(names, name)
			}
		}
		return true
	})
	return names
}

// checkCasing holds the JSON names of type typ to snake_case or camelCase.
func checkCasing(t *testing.T, typ string, names []string, snake bool) {
	t.Helper()
	for _, name := range names {
		isSnake, isCamel := strings.Contains(name, "_"), strings.ToLower(name) != name
		switch {
		case snake && isCamel:
			t.Errorf("%s names %q in camelCase, in a snake_case family (snakeCaseTypes)", typ, name)
		case !snake && isSnake:
			t.Errorf("%s names %q in snake_case: records oa signs and --json output are camelCase; list %s in snakeCaseTypes only if it is an MCP, CUE-file or run-record type (DESIGN.md, JSON names)", typ, name, typ)
		case strings.EqualFold(strings.ReplaceAll(name, "_", ""), "plandigest") && name != "planDigest" && !(name == "plan_digest" && typ == "ledger.RunRecord"):
			t.Errorf("%s names the plan digest %q: it is planDigest", typ, name)
		}
	}
}
