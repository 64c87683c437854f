package schemas

import (
	"slices"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func TestDefinitionsCompile(t *testing.T) {
	ctx := cuecontext.New()
	for _, def := range []string{Bundle, WorkerIR, PurePackage} {
		if _, err := Definition(ctx, def); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
	}
}

func TestPurePackagesExcludeTool(t *testing.T) {
	pkgs, err := PurePackages(cuecontext.New())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkgs, "strings") || !slices.IsSorted(pkgs) {
		t.Fatalf("PurePackages = %v, want sorted list containing strings", pkgs)
	}
	for _, p := range pkgs {
		if len(p) >= 5 && p[:5] == "tool/" {
			t.Fatalf("allow-list contains %s", p)
		}
	}
}

func TestFleetDefinitionCompiles(t *testing.T) {
	v, err := Build(cuecontext.New(), Fleet)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.LookupPath(cue.ParsePath(FleetDef)).Err(); err != nil {
		t.Fatal(err)
	}
}
