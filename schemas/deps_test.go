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
	stages := []string{"../oci", "../admit", "../resolve", "../bind", "../coordinator", "../fleet"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, stages...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if slices.Contains(strings.Fields(string(out)), compiler) {
		t.Errorf("one of %v imports %s", stages, compiler)
	}
}
