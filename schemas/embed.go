// Package schemas embeds the CUE schemas of oa so that every stage checks
// its inputs against the same definitions the stock `cue` CLI reads.
package schemas

import (
	_ "embed"
	"fmt"
	"sort"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
)

// Worker is the CUE source of package worker: #Bundle (what a publisher
// writes) and #Worker (canonical Worker IR), with their shared definitions.
// It is the concatenation of bundle.cue and ir.cue, which are one package.
var Worker = []File{{Name: "schemas/bundle.cue", Source: bundleCUE}, {Name: "schemas/ir.cue", Source: irCUE}}

//go:embed bundle.cue
var bundleCUE []byte

//go:embed ir.cue
var irCUE []byte

// File is one embedded schema file.
type File struct {
	// Name is the path of the file in the oa repository, used in positions.
	Name string
	// Source is the file's CUE text.
	Source []byte
}

// Definitions looked up in the worker schema.
const (
	Bundle      = "#Bundle"
	WorkerIR    = "#Worker"
	PurePackage = "#PurePackage"
)

// Build compiles files (one CUE package) in ctx.
func Build(ctx *cue.Context, files []File) (cue.Value, error) {
	inst := build.NewContext().NewInstance("schemas", nil)
	for _, f := range files {
		if err := inst.AddFile(f.Name, f.Source); err != nil {
			return cue.Value{}, fmt.Errorf("schemas: %s: %w", f.Name, err)
		}
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("schemas: %w", err)
	}
	return v, nil
}

// Definition returns the definition named def (such as "#Bundle") of the
// worker schema, compiled in ctx.
func Definition(ctx *cue.Context, def string) (cue.Value, error) {
	v, err := Build(ctx, Worker)
	if err != nil {
		return cue.Value{}, err
	}
	d := v.LookupPath(cue.ParsePath(def))
	if err := d.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("schemas: %s: %w", def, err)
	}
	return d, nil
}

// PurePackages returns the default allow-list of pure CUE standard packages
// (#PurePackage), sorted.
func PurePackages(ctx *cue.Context) ([]string, error) {
	d, err := Definition(ctx, PurePackage)
	if err != nil {
		return nil, err
	}
	op, alts := d.Expr()
	if op != cue.OrOp {
		return nil, fmt.Errorf("schemas: %s is not a disjunction", PurePackage)
	}
	out := make([]string, 0, len(alts))
	for _, a := range alts {
		s, err := a.String()
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", PurePackage, err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}
