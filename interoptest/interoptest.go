// Package interoptest gives tests the stock CLIs oa must interoperate with
// (cosign, oras, cue), built from the versions pinned as tools in go.mod,
// so that `go test ./...` needs nothing installed beforehand. The first
// build of a tool is slow (cosign takes minutes); the Go build cache makes
// every later one quick.
package interoptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Tools pinned in go.mod, by the name tests use.
var packages = map[string]string{
	"cosign": "github.com/sigstore/cosign/v2/cmd/cosign",
	"oras":   "oras.land/oras/cmd/oras",
	"cue":    "cuelang.org/go/cmd/cue",
	// cosign v3 is not a go.mod tool: as a second cosign major it would
	// upgrade a hundred shared dependencies. It is installed at this exact
	// version instead (OA_COSIGN3 names an installed one).
	"cosign3": "github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3",
}

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Tool returns the path of the stock CLI name. OA_<NAME> (OA_COSIGN,
// OA_COSIGN3, OA_ORAS, OA_CUE) may point at an installed binary; otherwise the pinned
// version is built into a temporary folder once per test process.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p := os.Getenv("OA_" + strings.ToUpper(name)); p != "" {
		return p
	}
	pkg, ok := packages[name]
	if !ok {
		t.Fatalf("interoptest: no pinned tool %q", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "oa-interop-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if path, _, versioned := strings.Cut(pkg, "@"); versioned {
		// go install names the binary after the package; its own folder
		// keeps it apart from the go.mod tools.
		cmd = exec.Command("go", "install", pkg)
		cmd.Env = append(os.Environ(), "GOBIN="+out, "GOFLAGS=")
		out = filepath.Join(out, filepath.Base(path))
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("interoptest: building %s: %v\n%s", pkg, err, b)
	}
	built[name] = out
	return out
}

// Env returns an environment for running cosign offline in a test: HOME in
// a fresh folder (cosign writes a TUF cache there) and a Rekor key path set
// to nothing, so no trust root is fetched; plus extra.
func Env(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "TUF_ROOT="+filepath.Join(home, "tuf"), "SIGSTORE_REKOR_PUBLIC_KEY=/nonexistent", "DOCKER_CONFIG="+filepath.Join(home, "docker"))
	return append(env, extra...)
}
