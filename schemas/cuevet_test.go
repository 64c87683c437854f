package schemas_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/examples"
	"github.com/oa-dev/oa/testkit/interoptest"
)

// cueVet runs the stock CUE CLI, pinned as a tool in go.mod, from the
// module root, and returns its combined output and whether it passed.
func cueVet(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(interoptest.Tool(t, "cue"), append([]string{"vet"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running go tool cue: %v", err)
		}
	}
	return string(out), err == nil
}

func bundleFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.cue"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .cue files in %s", dir)
	}
	for i, f := range files {
		files[i] = strings.TrimPrefix(f, "../")
	}
	return files
}

// TestStockCueVetAcceptsExamples is the publisher's view: the stock cue CLI
// checks every example bundle against #Bundle and its golden IR against
// #Worker, with the same schema files oa embeds.
func TestStockCueVetAcceptsExamples(t *testing.T) {
	for _, name := range examples.Names() {
		files := append([]string{"schemas/bundle.cue", "schemas/vet/bundle_root.cue"}, bundleFiles(t, "examples/"+name)...)
		if out, ok := cueVet(t, append([]string{"-c"}, files...)...); !ok {
			t.Errorf("cue vet of %s failed:\n%s", name, out)
		}
		golden := "compiler/testdata/golden/" + name + ".ir.json"
		if out, ok := cueVet(t, "-c", "schemas/bundle.cue", "schemas/ir.cue", golden, "-d", "#Worker"); !ok {
			t.Errorf("cue vet of %s against #Worker failed:\n%s", golden, out)
		}
	}
}

// TestStockCueVetRefusesBadBundle is the control: the same command fails
// on a bundle the compiler refuses by schema.
func TestStockCueVetRefusesBadBundle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "worker.cue")
	if err := os.WriteFile(bad, []byte("package worker\n\nname: \"Bad Name\"\nversion: \"1.2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(bad)
	out, ok := cueVet(t, "-c", "schemas/bundle.cue", "schemas/vet/bundle_root.cue", abs)
	if ok {
		t.Fatal("cue vet accepted a bundle with a bad name and version")
	}
	if !strings.Contains(out, "name") {
		t.Fatalf("cue vet output does not name the field:\n%s", out)
	}
}
