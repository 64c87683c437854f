// Package compiler turns a workflow bundle (a folder of CUE files of package
// worker plus skills/*.md) into canonical Worker IR.
//
// Compile reads the bundle's files through an os.Root, refusing links
// that leave the folder, anything but regular files, and files or bundles
// over the size limits (MaxBundleFileBytes, MaxBundleBytes, MaxBundleFiles)
// before a byte is believed. It loads the bytes with cuelang.org/go,
// unifies them with #Bundle from the embedded schemas, requires the result
// to be concrete, refuses customer state, checks every evaluator expression
// against the scope of the steps that use it, normalizes (defaults filled;
// capabilities, jobs, evaluators, skills and inputs in a stable order) and
// checks the result against #Worker. The same bundle gives the same bytes
// whatever its field order, file split or machine. Every refusal is a
// blocking.List of located errors.
//
// CompileWithin runs Compile in a child process held to a time and memory
// budget; it is the CLI's path. CUE errors become refusals through
// schemas.CUERefusals, the same code the host stages use for their files.
package compiler

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/component"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/schemas"
)

// PackageName is the CUE package every bundle file declares, so that the
// stock `cue vet` can unify a bundle with the schemas, which share it.
const PackageName = "worker"

// Result is a compiled bundle.
type Result struct {
	Worker *ir.Worker
	// IR is the canonical encoding of Worker.
	IR []byte
	// Digest is the workerIrDigest, the sha256 of IR.
	Digest string
}

// Compile compiles the bundle in dir. A refusal is a blocking.List; any
// other error is a program fault.
func Compile(dir string) (*Result, error) {
	ctx := cuecontext.New()
	c := &compilation{dir: dir, ctx: ctx, checker: component.NewChecker(ctx), broken: map[string]bool{}}
	return c.run()
}

type compilation struct {
	dir     string
	ctx     *cue.Context
	files   []string  // the bundle's .cue files
	schema  cue.Value // #Bundle
	raw     cue.Value // the bundle as written, for positions
	bundle  cue.Value // the bundle unified with #Bundle
	pure    []string
	checker *component.Checker
	broken  map[string]bool // evaluators whose expression does not parse
	refused blocking.List
}

func (c *compilation) run() (*Result, error) {
	sources, skillFiles, err := c.readBundle()
	if err != nil || len(c.refused) > 0 {
		return nil, firstErr(err, c.refused)
	}
	if err := c.load(sources); err != nil || len(c.refused) > 0 {
		return nil, firstErr(err, c.refused)
	}
	var src bundleSource
	if err := c.bundle.Decode(&src); err != nil {
		return nil, fmt.Errorf("compiler: decoding a bundle that passed the schema: %w", err)
	}
	skills := c.readSkills(skillFiles)
	c.scanBundle(src, skills)
	w, err := c.build(src, skills)
	if err != nil {
		return nil, err
	}
	c.checkEvaluators(w)
	for _, p := range ir.Validate(w) {
		c.refuseAt(p.Code, bundlePath(p.Path), "%s", p.Detail)
	}
	if len(c.refused) > 0 {
		return nil, c.refused
	}
	return c.finish(w)
}

func firstErr(err error, refused blocking.List) error {
	if err != nil {
		return err
	}
	return refused
}

// readBundle reads the bundle's .cue files and skills/*.md (see
// bundleFiles for what is refused), refusing a folder without any .cue
// file. Nothing else ever reads the folder: CUE is given the bytes read
// here, and the bundle may import only builtin packages, so the evaluator
// opens no file of its own.
func (c *compilation) readBundle() (sources, skills []sourceFile, err error) {
	b, err := openBundle(c.dir)
	if err != nil {
		return nil, nil, err
	}
	defer b.Close()
	cueNames, err := b.list(".", "*.cue")
	if err != nil {
		return nil, nil, err
	}
	skillNames, err := b.list("skills", "*.md")
	if err != nil {
		return nil, nil, err
	}
	if len(b.refused) > 0 {
		c.refused = append(c.refused, b.refused...)
		return nil, nil, nil
	}
	if len(cueNames) == 0 {
		return nil, nil, blocking.New(blocking.BundleUnreadable, "the folder holds no .cue files").At(c.dir, "")
	}
	sources, skills = b.readAll(cueNames), b.readAll(skillNames)
	c.refused = append(c.refused, b.refused...)
	return sources, skills, nil
}

// load parses and builds the bundle files as one package, checks their
// package name and imports, and unifies them with #Bundle.
func (c *compilation) load(files []sourceFile) error {
	compiled, err := schemas.Compile(c.ctx)
	if err != nil {
		return err
	}
	c.pure, c.schema = compiled.Pure, compiled.Bundle
	for _, f := range files {
		c.files = append(c.files, f.path)
	}
	schema := compiled.Bundle
	// Parse first, so syntax, package and import refusals are found before
	// the loader turns them into less specific errors of its own.
	parsed, err := c.parse(files)
	if err != nil || len(c.refused) > 0 {
		return err
	}
	c.checkPackage(parsed)
	if len(c.refused) > 0 {
		return nil
	}
	// The parsed files are built as one instance directly: the loader
	// would parse them again, and a bundle has no imports but builtins.
	inst := build.NewContext().NewInstance(c.dir, nil)
	for _, f := range parsed {
		if err := inst.AddSyntax(f); err != nil {
			c.refuseCUE(blocking.BundleInvalid, err)
			return nil
		}
	}
	v := c.ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		c.refuseCUE(blocking.BundleInvalid, err)
		return nil
	}
	// Counts first: a bundle that generates a hundred thousand jobs is
	// refused by counting them, before each is evaluated against the
	// schema.
	c.raw = v
	if !c.checkCounts(v) {
		return nil
	}
	// A conflict inside the bundle is the bundle's own error, reported
	// before the schema can add its view of the same field.
	if err := v.Validate(); err != nil {
		c.refuseCUE(blocking.BundleInvalid, err)
		return nil
	}
	c.raw, c.bundle = v, schema.Unify(v)
	// One concrete validation on the common path; only when it fails does
	// a second, non-concrete one tell schema violations from missing values.
	if err := c.bundle.Validate(cue.Concrete(true)); err != nil {
		if verr := c.bundle.Validate(); verr != nil {
			c.refuseCUE(blocking.BundleSchemaViolation, verr)
		} else {
			c.refuseCUE(blocking.BundleIncomplete, err)
		}
	}
	return nil
}

// Most entries a package may hold: far above any real package, low enough
// that every later check (and every host) stays quick.
const (
	MaxJobs         = 256
	MaxCapabilities = 256
	MaxEvaluators   = 1024
	MaxStepsPerJob  = 128
)

// checkCounts refuses a bundle with more jobs, capabilities, evaluators
// or steps in a job than a package may hold (bundle_too_many_entries),
// counting fields and list elements without evaluating what they hold.
func (c *compilation) checkCounts(v cue.Value) bool {
	ok := true
	for _, f := range []struct {
		name string
		max  int
	}{{"jobs", MaxJobs}, {"capabilities", MaxCapabilities}, {"evaluators", MaxEvaluators}} {
		n := 0
		iter, err := v.LookupPath(cue.MakePath(cue.Str(f.name))).Fields()
		if err != nil {
			continue // absent or not a struct: the schema says so later
		}
		for iter.Next() {
			if n++; n > f.max {
				c.refuseAt(blocking.BundleTooManyEntries, f.name, "more than %d %s", f.max, f.name)
				ok = false
				break
			}
		}
		if f.name != "jobs" || !ok {
			continue
		}
		jobs, _ := v.LookupPath(cue.MakePath(cue.Str("jobs"))).Fields()
		for jobs.Next() {
			steps := jobs.Value().LookupPath(cue.MakePath(cue.Str("steps")))
			if l, err := steps.List(); err == nil {
				k := 0
				for l.Next() {
					if k++; k > MaxStepsPerJob {
						c.refuseAt(blocking.BundleTooManyEntries, "jobs\x00"+jobs.Selector().Unquoted()+"\x00steps", "more than %d steps in a job", MaxStepsPerJob)
						ok = false
						break
					}
				}
			}
		}
	}
	return ok
}

// readSkills turns the skill docs read, in name order, into documents,
// refusing an empty set and docs that are empty, not UTF-8 or oddly named.
func (c *compilation) readSkills(files []sourceFile) []ir.Document {
	if len(files) == 0 {
		c.refuseAt(blocking.SkillDocsMissing, "", "no skills/*.md file").Pos = filepath.Join(c.dir, "skills")
	}
	docs := make([]ir.Document, 0, len(files))
	for _, f := range files {
		name := path.Base(f.rel)
		if !validDocName(name) || len(strings.TrimSpace(string(f.data))) == 0 || !isUTF8(f.data) {
			c.refuseAt(blocking.SkillDocInvalid, "", "an empty, non-UTF-8 or oddly named skill doc").Pos = f.path
			continue
		}
		docs = append(docs, document(name, string(f.data)))
	}
	return docs
}

func document(name, text string) ir.Document {
	return ir.Document{Name: name, MediaType: ir.DocumentMediaType, Digest: ir.DigestBytes([]byte(text)), Text: text}
}

// finish encodes w. That what the compiler emits matches #Worker is proven
// by the tests (every golden, generated and permuted bundle's IR is checked
// with schemas.CheckWorkerBytes); the stages that take IR from elsewhere
// check it again (schemas.CheckIR).
func (c *compilation) finish(w *ir.Worker) (*Result, error) {
	b, err := ir.Encode(w)
	if err != nil {
		return nil, fmt.Errorf("compiler: encoding IR: %w", err)
	}
	return &Result{Worker: w, IR: b, Digest: ir.DigestBytes(b)}, nil
}

// parse parses every bundle file, refusing those with syntax errors.
func (c *compilation) parse(files []sourceFile) ([]*ast.File, error) {
	parsed := make([]*ast.File, 0, len(files))
	for _, f := range files {
		file, err := parser.ParseFile(f.path, f.data, parser.ParseComments)
		if err != nil {
			c.refuseCUE(blocking.BundleSyntax, err)
			continue
		}
		parsed = append(parsed, file)
	}
	return parsed, nil
}

// checkPackage refuses files of another package than worker and imports
// outside the pure allow-list: a bundle evaluates to data, with no I/O.
func (c *compilation) checkPackage(files []*ast.File) {
	for _, f := range files {
		if name := f.PackageName(); name != PackageName {
			c.refused = append(c.refused, blocking.New(blocking.BundlePackageInvalid, "file declares package %q, want %q", name, PackageName).At(schemas.FormatPos(f.Pos()), ""))
		}
		for spec := range f.ImportSpecs() {
			p, err := strconv.Unquote(spec.Path.Value)
			if err == nil && slices.Contains(c.pure, p) {
				continue
			}
			c.refused = append(c.refused, blocking.New(blocking.BundleImportForbidden, "import %s is not a pure standard package", spec.Path.Value).At(schemas.FormatPos(spec.Pos()), ""))
		}
	}
}
