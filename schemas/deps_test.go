package schemas

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestHostStagesDoNotLoadTheCompiler: config loading and the foreign-IR
// check live here so that nothing a host runs imports the publisher's
// compiler; this holds the line with the go tool's own import graph.
func TestHostStagesDoNotLoadTheCompiler(t *testing.T) {
	const compiler = "github.com/oa-dev/oa/compiler"
	stages := []string{"../oci", "../signing", "../host", "../admit", "../resolve", "../bind", "../coordinator", "../fleet"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, stages...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), compiler) {
		t.Errorf("one of %v imports %s", stages, compiler)
	}
}

// TestStagesImportOnlyEarlierStages: data flows one way down the pipeline
// (docs/ARCHITECTURE.md); a stage that imported a later one would turn
// the map into a tangle, so the go tool's import graph is checked for it.
func TestStagesImportOnlyEarlierStages(t *testing.T) {
	const module = "github.com/oa-dev/oa/"
	stages := []string{"ir", "compiler", "oci", "signing", "host", "admit", "projection", "resolve", "bind", "harness", "coordinator", "audit"}
	for i, stage := range stages {
		out, err := exec.Command("go", "list", "-deps", "../"+stage).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", stage, err)
		}
		deps := strings.Fields(string(out))
		for _, later := range stages[i+1:] {
			if slices.Contains(deps, module+later) {
				t.Errorf("stage %s imports the later stage %s", stage, later)
			}
		}
	}
}
