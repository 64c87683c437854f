package schemas

import (
	"fmt"
	"path/filepath"
	"strconv"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/boundedfile"
)

// Locator gives the "file:line:col" of a field of a loaded configuration
// file, by its path segments (numbers are list indexes), or the file name
// when the field has no position in the file.
type Locator func(segs ...string) string

// ConfigFile says how to load one kind of configuration file written in
// CUE by an operator (a host policy, a capability registry, a fleet). It
// lives beside the schemas rather than in the compiler so that a host
// stage (admission, resolution, the coordinator, fleet provisioning)
// loads its own files without loading the publisher's compiler.
type ConfigFile struct {
	// Package is the CUE package the file must declare.
	Package string
	// Schema holds the definition Def the file is unified with.
	Schema []File
	Def    string
	// Unreadable and Invalid are the refusals for a file that cannot be
	// read and one that does not match.
	Unreadable, Invalid blocking.Code
}

// LoadConfig reads the file at path, unifies it with the definition and
// checks it is concrete. Refusals are located in the file itself.
func LoadConfig(path string, cf ConfigFile) (cue.Value, Locator, error) {
	src, err := boundedfile.ReadRegular(path, MaxConfigFileBytes)
	if err != nil {
		return cue.Value{}, nil, blocking.New(cf.Unreadable, "%s", err).At(path, "")
	}
	abs, _ := filepath.Abs(path)
	inFile := func(name string) bool { return name == path || name == abs }
	file, err := parser.ParseFile(path, src, parser.ParseComments)
	if err != nil {
		return cue.Value{}, nil, CUERefusals(cf.Invalid, err, inFile, nil)
	}
	if file.PackageName() != cf.Package {
		return cue.Value{}, nil, blocking.New(cf.Invalid, "the file must declare package %s", cf.Package).At(path+":1:1", "")
	}
	ctx := cuecontext.New()
	schema, err := Build(ctx, cf.Schema)
	if err != nil {
		return cue.Value{}, nil, err
	}
	inst := build.NewContext().NewInstance(filepath.Dir(path), nil)
	if err := inst.AddSyntax(file); err != nil {
		return cue.Value{}, nil, CUERefusals(cf.Invalid, err, inFile, nil)
	}
	data := ctx.BuildInstance(inst)
	v := schema.LookupPath(cue.ParsePath(cf.Def)).Unify(data)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return cue.Value{}, nil, CUERefusals(cf.Invalid, err, inFile, nil)
	}
	locate := func(segs ...string) string {
		sels := make([]cue.Selector, len(segs))
		for i, seg := range segs {
			if n, err := strconv.Atoi(seg); err == nil {
				sels[i] = cue.Index(n)
			} else {
				sels[i] = cue.Str(seg)
			}
		}
		// Positions come from the file alone: the unified value would
		// name the schema's line for fields the schema declares.
		pos := data.LookupPath(cue.MakePath(sels...)).Pos()
		if !pos.IsValid() {
			return path
		}
		return fmt.Sprintf("%s:%d:%d", path, pos.Line(), pos.Column())
	}
	return v, locate, nil
}

// MaxConfigFileBytes bounds a configuration file LoadConfig reads.
const MaxConfigFileBytes = 4 << 20
