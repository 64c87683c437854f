// Package schemas embeds the CUE schemas of oa so that every stage checks
// its inputs against the same definitions the stock `cue` CLI reads, and
// holds the checks against them that more than one stage makes: loading
// an operator's CUE file (LoadConfig, with boundedfile.ReadRegular's bounded read),
// turning CUE errors into located, redacted refusals (CUERefusals), and
// checking Worker IR that came from elsewhere (CheckIR). They live here,
// not in the compiler, so that a host stage loads no part of the
// publisher's compiler.
//
// LoadConfig reads an operator's CUE file (host policy, capability registry,
// fleet; a regular file of at most MaxConfigFileBytes) against its schema,
// with refusals located in the file. CheckIR is the one check of IR from
// elsewhere: strict decoding, #Worker, ir.Validate, the customer-state scan,
// stopping after the step its caller asks for (IRSchema for an artifact's
// fetch, IRValid for `oa inspect`, IRClean for `oa push`), so every caller
// refuses a crafted IR with the same code at the same field.
package schemas

import (
	_ "embed"
	"fmt"
	"sort"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/parser"
)

// Worker is the CUE source of package worker: #Bundle (what a publisher
// writes) and #Worker (canonical Worker IR), with their shared definitions.
// It is the concatenation of bundle.cue and ir.cue, which are one package.
var Worker = []File{{Name: "schemas/bundle.cue", Source: bundleCUE}, {Name: "schemas/ir.cue", Source: irCUE}}

//go:embed bundle.cue
var bundleCUE []byte

// Host is the CUE source of package host: #Policy, a host's trust policy,
// and #Registry, its capability registry.
var Host = []File{{Name: "schemas/host/policy.cue", Source: hostPolicyCUE}, {Name: "schemas/host/registry.cue", Source: hostRegistryCUE}}

// Definitions looked up in the host schema.
const (
	PolicyDef   = "#Policy"
	RegistryDef = "#Registry"
)

//go:embed host/policy.cue
var hostPolicyCUE []byte

// Fleet is the CUE source of package fleet: #Fleet, the hosts and
// deployments one registry provisions.
var Fleet = []File{{Name: "schemas/fleet/fleet.cue", Source: fleetCUE}}

// FleetDef is the definition looked up in the fleet schema.
const FleetDef = "#Fleet"

//go:embed fleet/fleet.cue
var fleetCUE []byte

//go:embed host/registry.cue
var hostRegistryCUE []byte

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
		file, err := parser.ParseFile(f.Name, f.Source, parser.ParseComments)
		if err != nil {
			return cue.Value{}, fmt.Errorf("schemas: %s: %w", f.Name, err)
		}
		if err := inst.AddSyntax(file); err != nil {
			return cue.Value{}, fmt.Errorf("schemas: %s: %w", f.Name, err)
		}
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("schemas: %w", err)
	}
	return v, nil
}

// Compiled is the worker schema compiled once in one context, with the
// definitions the stages look up.
type Compiled struct {
	// Bundle is #Bundle, WorkerIR is #Worker.
	Bundle, WorkerIR cue.Value
	// Pure is the default allow-list of pure CUE standard packages
	// (#PurePackage), sorted.
	Pure []string
}

// Compile compiles the worker schema in ctx.
func Compile(ctx *cue.Context) (*Compiled, error) {
	v, err := Build(ctx, Worker)
	if err != nil {
		return nil, err
	}
	var c Compiled
	for _, d := range []struct {
		name string
		to   *cue.Value
	}{{Bundle, &c.Bundle}, {WorkerIR, &c.WorkerIR}} {
		*d.to = v.LookupPath(cue.ParsePath(d.name))
		if err := d.to.Err(); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", d.name, err)
		}
	}
	if c.Pure, err = alternatives(v.LookupPath(cue.ParsePath(PurePackage))); err != nil {
		return nil, err
	}
	return &c, nil
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
	return alternatives(d)
}

// alternatives returns the sorted string alternatives of a disjunction.
func alternatives(d cue.Value) ([]string, error) {
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
