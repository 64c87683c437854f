package compiler

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden IR files")

// exampleDir copies an embedded example bundle into a fresh folder.
func exampleDir(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := examples.Write(name, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustCompile(t testing.TB, dir string) *Result {
	t.Helper()
	res, err := Compile(dir)
	if err != nil {
		t.Fatalf("Compile(%s): %v", dir, err)
	}
	return res
}

// mustCompileChecked compiles and also checks the emitted IR against
// #Worker, the guarantee Compile leaves to these tests.
func mustCompileChecked(t testing.TB, dir string) *Result {
	t.Helper()
	res := mustCompile(t, dir)
	if err := schemas.CheckWorkerBytes(cuecontext.New(), res.IR); err != nil {
		t.Fatalf("IR of %s fails #Worker: %v", dir, err)
	}
	if err := schemas.CheckWorker(cuecontext.New(), res.Worker); err != nil {
		t.Fatalf("IR value of %s fails #Worker: %v", dir, err)
	}
	return res
}

func TestGoldenIR(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			res := mustCompileChecked(t, exampleDir(t, name))
			golden := filepath.Join("testdata", "golden", name+".ir.json")
			if *update {
				if err := os.WriteFile(golden, res.IR, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./compiler -update to create it)", err)
			}
			if !bytes.Equal(res.IR, want) {
				t.Fatalf("IR differs from %s (digest %s); if the change is intended, run with -update", golden, res.Digest)
			}
			w, err := ir.DecodeCanonical(want)
			if err != nil {
				t.Fatalf("golden IR does not decode canonically: %v", err)
			}
			if problems := ir.Validate(w); len(problems) > 0 {
				t.Fatalf("golden IR breaks invariants: %v", problems)
			}
			if d, _ := w.Digest(); d != res.Digest {
				t.Fatalf("digest of decoded golden %s != compiled %s", d, res.Digest)
			}
		})
	}
}

// TestDeterminismUnderReorderingAndSplits is a property test: for random
// permutations of every struct's fields (lists keep their order, which is
// meaning) and random splits of the top-level fields across files, the
// compiled IR is byte-identical.
func TestDeterminismUnderReorderingAndSplits(t *testing.T) {
	for _, name := range examples.Names() {
		t.Run(name, func(t *testing.T) {
			base := exampleDir(t, name)
			want := mustCompile(t, base)
			decls := topLevelDecls(t, base)
			for seed := int64(1); seed <= 12; seed++ {
				rng := rand.New(rand.NewSource(seed))
				dir := filepath.Join(t.TempDir(), fmt.Sprintf("variant-%d", seed))
				writeVariant(t, rng, dir, decls)
				if err := os.CopyFS(filepath.Join(dir, "skills"), os.DirFS(filepath.Join(base, "skills"))); err != nil {
					t.Fatal(err)
				}
				got := mustCompileChecked(t, dir)
				if !bytes.Equal(got.IR, want.IR) {
					t.Fatalf("seed %d: IR differs (%s vs %s)", seed, got.Digest, want.Digest)
				}
			}
		})
	}
}

// TestDeterminismAcrossPaths compiles the same bundle through a relative
// and an absolute path from another working directory.
func TestDeterminismAcrossPaths(t *testing.T) {
	dir := exampleDir(t, examples.Default)
	abs := mustCompile(t, dir)
	t.Chdir(filepath.Dir(dir))
	rel := mustCompile(t, filepath.Base(dir))
	if !bytes.Equal(abs.IR, rel.IR) {
		t.Fatal("IR depends on how the bundle path is spelled")
	}
}

// topLevelDecls parses every .cue file of dir and returns the top-level
// declarations after the package clause, imports excluded.
func topLevelDecls(t *testing.T, dir string) []ast.Decl {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
	var decls []ast.Decl
	for _, f := range files {
		file, err := parser.ParseFile(f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d.(type) {
			case *ast.Package, *ast.ImportDecl:
				continue
			}
			decls = append(decls, d)
		}
	}
	return decls
}

// writeVariant shuffles struct fields at every depth and deals the
// top-level declarations into one to four files.
func writeVariant(t *testing.T, rng *rand.Rand, dir string, decls []ast.Decl) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shuffled := make([]ast.Decl, len(decls))
	for i, d := range decls {
		shuffled[i] = shuffleDecl(rng, d)
	}
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	nfiles := 1 + rng.Intn(4)
	buckets := make([][]ast.Decl, nfiles)
	for _, d := range shuffled {
		k := rng.Intn(nfiles)
		buckets[k] = append(buckets[k], d)
	}
	for i, b := range buckets {
		f := &ast.File{Decls: append([]ast.Decl{&ast.Package{Name: ast.NewIdent(PackageName)}}, b...)}
		f.Decls = append(f.Decls[:1], append([]ast.Decl{imports("strings")}, f.Decls[1:]...)...)
		src, err := format.Node(f)
		if err != nil {
			t.Fatal(err)
		}
		// An unused import is an error in CUE; reference it harmlessly.
		src = append(src, []byte("\n_use_strings: strings.ToLower(\"\")\n")...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part%d.cue", i)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func imports(paths ...string) *ast.ImportDecl {
	d := &ast.ImportDecl{}
	for _, p := range paths {
		d.Specs = append(d.Specs, ast.NewImport(nil, p))
	}
	return d
}

// shuffleDecl returns d with the fields of every struct literal inside it
// in a random order. List elements keep their order.
func shuffleDecl(rng *rand.Rand, d ast.Decl) ast.Decl {
	ast.Walk(d, func(n ast.Node) bool {
		if s, ok := n.(*ast.StructLit); ok {
			rng.Shuffle(len(s.Elts), func(i, j int) { s.Elts[i], s.Elts[j] = s.Elts[j], s.Elts[i] })
		}
		return true
	}, nil)
	return d
}

// TestCheckWorkerRefusesWhatTheSchemaRefuses: the value-based check sees
// what the byte-based one sees.
func TestCheckWorkerRefusesWhatTheSchemaRefuses(t *testing.T) {
	for name, edit := range map[string]func(w *ir.Worker){
		"bad name":      func(w *ir.Worker) { w.Name = "Bad Name" },
		"no skills":     func(w *ir.Worker) { w.Skills = nil },
		"unknown risk":  func(w *ir.Worker) { w.Capabilities[0].Risk = "dangerous" },
		"bad digest":    func(w *ir.Worker) { w.Evaluators[0].Digest = "md5:x" },
		"empty purpose": func(w *ir.Worker) { w.Jobs[0].Purpose = "" },
	} {
		res := mustCompile(t, exampleDir(t, examples.Default))
		edit(res.Worker)
		b, _ := ir.Encode(res.Worker)
		for how, err := range map[string]error{"value": schemas.CheckWorker(cuecontext.New(), res.Worker), "bytes": schemas.CheckWorkerBytes(cuecontext.New(), b)} {
			l := blocking.Refusals(err)
			if len(l) == 0 || l[0].Code != blocking.IRSchemaViolation {
				t.Errorf("%s (%s): %v, want ir_schema_violation", name, how, err)
			}
		}
	}
}

// TestTextAnswerStep: a read step declared answer text compiles with its
// later steps reading steps.X.text and steps.X.json, and carries the
// answer into the IR; the clinic example, which declares none, keeps its
// golden IR (TestGoldenIR).
func TestTextAnswerStep(t *testing.T) {
	dir := editedExample(t,
		replaceOnce("jobs.cue", `args: "record_lookup"},`, `args: "record_lookup", answer: "text"},`),
		replaceOnce("jobs.cue", `expr: "steps.load_record.status == \"open\""`, `expr: "steps.load_record.json.status == \"open\" || steps.load_record.text == \"open\""`))
	res := mustCompileChecked(t, dir)
	w, err := ir.DecodeCanonical(res.IR)
	if err != nil {
		t.Fatal(err)
	}
	steps := w.Jobs[0].Steps
	if steps[0].Answer != ir.AnswerText || steps[3].Answer != "" {
		t.Fatalf("answers in the IR: %q %q", steps[0].Answer, steps[3].Answer)
	}
	if !bytes.Contains(res.IR, []byte(`"answer":"text"`)) {
		t.Fatalf("IR does not carry the answer")
	}
}
