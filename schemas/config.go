package schemas

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"

	"github.com/oa-dev/oa/blocking"
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
	src, err := ReadLocalFile(path, MaxConfigFileBytes)
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

// ReadLocalFile reads the regular file at path, at most max bytes. The
// operator names the file, so a link is followed, but what it names must
// be a regular file: a named pipe is never waited on and a device never
// read. The error names the rule, never the path, for a refusal's detail.
func ReadLocalFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no file at this path")
	}
	if err != nil {
		return nil, errors.New("the file cannot be opened")
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, errors.New("the file cannot be read")
	case !info.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	case info.Size() > max:
		return nil, fmt.Errorf("the file holds more than %d bytes", max)
	}
	b, err := readSized(io.LimitReader(f, max+1), info.Size())
	switch {
	case err != nil:
		return nil, errors.New("the file cannot be read")
	case int64(len(b)) > max:
		return nil, fmt.Errorf("the file holds more than %d bytes", max)
	}
	return b, nil
}

// readSized reads r to its end into a buffer sized for size bytes (plus
// one, to see a file that grew while read), as os.ReadFile does: a large
// file is read into one buffer instead of one that doubles its way up to
// it. r bounds how much is read.
func readSized(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
