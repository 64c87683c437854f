package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostStagesDoNotLoadTheCompiler: config loading and the foreign-IR
// check live here so that nothing a host runs imports the publisher's
// compiler; this holds the line with the go tool's own import graph.
func TestHostStagesDoNotLoadTheCompiler(t *testing.T) {
	const compiler = "github.com/oa-dev/oa/compiler"
	stages := []string{"../oci", "../signing", "../host", "../admit", "../resolve", "../bind", "../ledger", "../coordinator", "../coordinator/mcpserve", "../fleet"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, stages...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), compiler) {
		t.Errorf("one of %v imports %s", stages, compiler)
	}
}

// TestOCIDoesNotLoadCUE: reading and copying artifacts needs no CUE
// (issue 42); the #Worker check a fetch holds the IR to is passed in
// (schemas.CheckFetchedIR), so oci's import graph holds no cuelang.org
// package.
func TestOCIDoesNotLoadCUE(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../oci").Output()
	if err != nil {
		t.Fatalf("go list -deps oci: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/oa-dev/oa/ir") {
		t.Fatalf("go list -deps oci lists no ir: is it listing oci? %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "cuelang.org/") {
			t.Errorf("oci loads CUE: %s", d)
		}
	}
}

// stageOrder is every package of the module outside cmd/, internal/ and
// testkit/, in the order data flows: the shared vocabulary first (codes,
// the contract, the IR and its schemas), then the pipeline stages
// (docs/ARCHITECTURE.md), then the front doors that call many of them.
// A package may import only packages listed before it. internal/ is the
// ground floor under all of them and testkit/ the roof over them
// (TestInternalIsPlumbing).
var stageOrder = []string{
	"blocking", "contract", "ir", "component", "schemas", "examples",
	"compiler", "oci", "signing", "ledger/translog", "host", "admit", "projection",
	"telemetry", "connector/confine/launcher", "connector/confine", "connector/sandbox", "connector/secretfile", "connector/proc", "connector/remote", "connector", "connection",
	"resolve", "bind", "ledger", "harness", "fleet", "pipeline", "coordinator/attention", "coordinator", "coordinator/mcpserve", "audit", "demo", "console",
}

// TestStagesImportOnlyEarlierStages: data flows one way down the pipeline
// (docs/ARCHITECTURE.md); a stage that imported a later one would turn
// the map into a tangle, so the go tool's import graph is checked for it.
// Every package has its place: a new one fails here until it is listed.
func TestStagesImportOnlyEarlierStages(t *testing.T) {
	const module = "github.com/oa-dev/oa/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	place := map[string]int{}
	for i, p := range stageOrder {
		place[module+p] = i
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], f[1:]
		rel := strings.TrimPrefix(pkg, module)
		if strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "scripts/") || strings.HasPrefix(rel, "testkit/") {
			continue
		}
		i, ok := place[pkg]
		if !ok {
			t.Errorf("package %s has no place in stageOrder: list it after the packages it imports", rel)
			continue
		}
		for _, d := range deps {
			if j, ok := place[d]; ok && j > i {
				t.Errorf("%s imports the later stage %s", rel, strings.TrimPrefix(d, module))
			}
		}
	}
}

// TestAuditReadsTheLedgerNotTheEngine: an auditor checks the host's
// signed record through the ledger; the engine that made it (the
// coordinator, with its MCP face and connectors) is not in audit's import
// graph.
func TestAuditReadsTheLedgerNotTheEngine(t *testing.T) {
	const module = "github.com/oa-dev/oa/"
	out, err := exec.Command("go", "list", "-deps", "../audit").Output()
	if err != nil {
		t.Fatalf("go list -deps audit: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"ledger") || slices.Contains(deps, module+"coordinator") {
		t.Errorf("audit must import ledger and not coordinator; it imports: %v", deps)
	}
}

// TestOnlyOwnersReachTheStore: host.Host.Store, the raw handle the owning
// stages build their typed stores on, is called only where a typed store
// is built (admit's admissions; the ledger's runs and receipts, opened
// once as a ledger.Ledger, which the coordinator and the harness
// transcript go through). Any other stage goes through the owner's typed API, so no
// package writes another's tables.
func TestOnlyOwnersReachTheStore(t *testing.T) {
	allowed := map[string]string{
		"admit/store.go":   "storeOf(h *host.Host) admissions",
		"ledger/ledger.go": "Open(h *host.Host) *Ledger",
	}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if strings.HasPrefix(rel, "internal/store/") || strings.HasPrefix(rel, "host/") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if !strings.Contains(line, ".Store()") {
				continue
			}
			if want, ok := allowed[rel]; !ok || !strings.Contains(line, want) {
				t.Errorf("%s:%d calls Store(): use the owning stage's typed store", rel, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInternalIsPlumbing: internal/ is the ground floor — store, canonical
// JSON, atomic files, stdio framing, token sealing — and imports nothing of
// the stages above it; the test kits, which build real hosts and fleets
// from the stages, are the top floor, testkit/, over every stage, and no
// program code (only tests, and the kits themselves) imports them.
func TestInternalIsPlumbing(t *testing.T) {
	const module = "github.com/oa-dev/oa/"
	const testkit = module + "testkit/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		if strings.HasPrefix(pkg, testkit) {
			continue
		}
		plumbing := strings.HasPrefix(pkg, module+"internal/")
		for _, dep := range deps {
			switch {
			case strings.HasPrefix(dep, testkit):
				t.Errorf("%s imports the test kit %s", pkg, dep)
			case plumbing && strings.HasPrefix(dep, module) && !strings.HasPrefix(dep, module+"internal/"):
				t.Errorf("the plumbing package %s imports %s, above it", pkg, dep)
			}
		}
	}
}

// TestStoreOwnsNoDomainRows: internal/store is plumbing (the database,
// migrations, version chains, copying tables); the rows of the tables a
// stage owns are declared by that stage (admit's admissions and
// revocations, the ledger's runs, attention items and receipts) and the
// audit bundle's copy of them by audit, so no row type of theirs is
// declared in the store.
func TestStoreOwnsNoDomainRows(t *testing.T) {
	owned := []string{"Admission", "Revocation", "Run", "Attention", "Receipt", "Dump"}
	files, err := filepath.Glob("../internal/store/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				if n := spec.(*ast.TypeSpec).Name.Name; slices.ContainsFunc(owned, func(o string) bool { return strings.HasPrefix(n, o) }) {
					t.Errorf("%s declares %s: the owning stage declares its rows", name, n)
				}
			}
		}
	}
}
