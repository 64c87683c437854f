// Package interoptest gives tests the stock CLIs oa must interoperate with
// (cosign v2 and v3, oras, cue, torchwood's litewitness and witnessctl,
// the MCP Inspector, and the real MCP clients Claude Code, Gemini CLI
// and Codex from npm), at pinned
// versions, so that `go test ./...` needs nothing installed beforehand.
//
// Each tool is built (or, for the Inspector, installed with npm ci) once
// per machine into a stable cache folder, the user cache dir's
// oa-interop/NAME-VERSION-GOOS-GOARCH, and reused by every later test
// process: the folder is filled under a temporary name and renamed into
// place, so parallel test processes (go test ./... runs packages at once)
// never see half a tool, and the one that loses the race uses the
// winner's. `go run ./interoptest/cmd/interoptools` fills the cache ahead
// of time (.ci/run does). OA_COSIGN, OA_COSIGN3, OA_ORAS, OA_CUE,
// OA_LITEWITNESS, OA_WITNESSCTL, OA_INSPECTOR, OA_SERVER_EVERYTHING and
// OA_CLIENT_CLAUDE_CODE, OA_CLIENT_GEMINI_CLI, OA_CLIENT_CODEX
// may point at installed binaries
// instead; OA_INTEROP_CACHE
// moves the cache.
package interoptest

import (
	"crypto/sha256"
	_ "embed" // the Inspector's pinned package files
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// tool is one stock Go CLI at a pinned version.
type tool struct {
	// module is the Go module holding pkg; its version is the one go.mod
	// pins, unless version is set.
	module, pkg, version string
}

// Tools pinned in go.mod, by the name tests use, and cosign v3.
var tools = map[string]tool{
	"cosign": {module: "github.com/sigstore/cosign/v2", pkg: "github.com/sigstore/cosign/v2/cmd/cosign"},
	"oras":   {module: "oras.land/oras", pkg: "oras.land/oras/cmd/oras"},
	"cue":    {module: "cuelang.org/go", pkg: "cuelang.org/go/cmd/cue"},
	// cosign v3 is not a go.mod tool: as a second cosign major it would
	// upgrade a hundred shared dependencies. It is go installed at this
	// exact version instead.
	"cosign3": {module: "github.com/sigstore/cosign/v3", pkg: "github.com/sigstore/cosign/v3/cmd/cosign", version: "v3.1.3"},
	// litewitness, a c2sp.org/tlog-witness nobody here wrote (SQLite,
	// its key in an ssh-agent), and witnessctl, which tells it the logs
	// it knows: go installed at the torchwood version go.mod pins, as
	// their own module resolves its dependencies (zombiezen's SQLite,
	// sigsum) that oa's go.mod does not hold.
	"litewitness": {module: "filippo.io/torchwood", pkg: "filippo.io/torchwood/cmd/litewitness", version: "v0.6.1"},
	"witnessctl":  {module: "filippo.io/torchwood", pkg: "filippo.io/torchwood/cmd/witnessctl", version: "v0.6.1"},
}

// Names lists the stock tools Tool knows, sorted, "inspector" and
// "server-everything".
func Names() []string {
	names := []string{InspectorName, EverythingName}
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var (
	mu    sync.Mutex
	paths = map[string]string{}
)

// Tool returns the path of the stock CLI name (cosign, cosign3, oras,
// cue, litewitness, witnessctl). OA_<NAME> may name an installed binary; otherwise the pinned
// version is built into the cache the first time any process asks.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := Ensure(name)
	if err != nil {
		t.Fatalf("interoptest: %v", err)
	}
	return p
}

// Ensure returns the path of the stock CLI name, building it into the
// cache when it is not there yet (or the override named by OA_<NAME>).
func Ensure(name string) (string, error) {
	if p := os.Getenv("OA_" + strings.ToUpper(name)); p != "" {
		return p, nil
	}
	tl, ok := tools[name]
	if !ok {
		return "", fmt.Errorf("no pinned tool %q", name)
	}
	mu.Lock()
	defer mu.Unlock()
	if p, ok := paths[name]; ok {
		return p, nil
	}
	version := tl.version
	if version == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", tl.module).Output()
		if err != nil {
			return "", fmt.Errorf("finding the version go.mod pins for %s: %v", tl.module, err)
		}
		version = strings.TrimSpace(string(out))
	}
	bin := filepath.Base(tl.pkg)
	dir, err := cached(name+"-"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH, bin, func(tmp string) error {
		var cmd *exec.Cmd
		if tl.version != "" {
			// Outside go.mod: go install at the exact version, which
			// resolves its own dependencies.
			cmd = exec.Command("go", "install", tl.pkg+"@"+tl.version)
			cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=")
		} else {
			cmd = exec.Command("go", "build", "-o", filepath.Join(tmp, bin), tl.pkg)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s@%s: %v\n%s", tl.pkg, version, err, b)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	paths[name] = filepath.Join(dir, bin)
	return paths[name], nil
}

// InspectorName is the name Inspector is filled under by interoptools.
const InspectorName = "inspector"

// The Inspector's pinned package files: npm ci installs exactly the lock.
var (
	//go:embed inspector/package.json
	inspectorPackage []byte
	//go:embed inspector/package-lock.json
	inspectorLock []byte
)

// Inspector returns the path of the stock MCP Inspector's CLI entry
// (mcp-inspector), at the version interoptest/inspector/package-lock.json
// pins, installed with npm ci into the cache the first time. OA_INSPECTOR
// may name an installed one. It skips the test when npm is not installed
// or the npm registry cannot be reached for the first install.
func Inspector(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OA_INSPECTOR"); p != "" {
		return p
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed (needed once, to install the pinned MCP Inspector)")
	}
	p, err := EnsureInspector()
	if err != nil {
		if s := err.Error(); strings.Contains(s, "ENOTFOUND") || strings.Contains(s, "EAI_AGAIN") || strings.Contains(s, "ECONNREFUSED") || strings.Contains(s, "ETIMEDOUT") {
			t.Skipf("npm registry unreachable for the first install of the MCP Inspector: %v", firstLine(s))
		}
		t.Fatalf("interoptest: %v", err)
	}
	return p
}

// EnsureInspector installs the pinned MCP Inspector into the cache when it
// is not there yet and returns the path of its CLI entry.
func EnsureInspector() (string, error) {
	return ensureNPM(InspectorName, inspectorPackage, inspectorLock, "mcp-inspector")
}

// EverythingName is the name the stock MCP reference server
// server-everything is filled under by interoptools.
const EverythingName = "server-everything"

// server-everything's pinned package files (npm/everything): npm ci
// installs exactly the lock.
var (
	//go:embed npm/everything/package.json
	everythingPackage []byte
	//go:embed npm/everything/package-lock.json
	everythingLock []byte
)

// Everything returns the path of the stock MCP reference server
// (mcp-server-everything, run as `mcp-server-everything streamableHttp`),
// at the version npm/everything/package-lock.json pins, installed with npm
// ci into the cache the first time. OA_SERVER_EVERYTHING may name an
// installed one. It skips the test when npm is not installed or the npm
// registry cannot be reached for the first install.
func Everything(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OA_SERVER_EVERYTHING"); p != "" {
		return p
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed (needed once, to install the pinned server-everything)")
	}
	p, err := EnsureEverything()
	if err != nil {
		if s := err.Error(); strings.Contains(s, "ENOTFOUND") || strings.Contains(s, "EAI_AGAIN") || strings.Contains(s, "ECONNREFUSED") || strings.Contains(s, "ETIMEDOUT") {
			t.Skipf("npm registry unreachable for the first install of server-everything: %v", firstLine(s))
		}
		t.Fatalf("interoptest: %v", err)
	}
	return p
}

// EnsureEverything installs the pinned server-everything into the cache
// when it is not there yet and returns the path of its entry.
func EnsureEverything() (string, error) {
	return ensureNPM(EverythingName, everythingPackage, everythingLock, "mcp-server-everything")
}

// ensureNPM installs a pinned npm package set (package.json and its lock)
// into the cache under name, once, and returns the path of its bin entry.
func ensureNPM(name string, pkg, lock []byte, entry string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := paths[name]; ok {
		return p, nil
	}
	sum := sha256.Sum256(lock)
	bin := filepath.Join("node_modules", ".bin", entry)
	dir, err := cached(name+"-"+hex.EncodeToString(sum[:6]), bin, func(tmp string) error {
		for file, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(tmp, file), b, 0o644); err != nil {
				return err
			}
		}
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci of the pinned %s: %v\n%s", name, err, b)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	paths[name] = filepath.Join(dir, bin)
	return paths[name], nil
}

// CacheDir is the folder the tools are cached in: $OA_INTEROP_CACHE, else
// the user cache dir's oa-interop.
func CacheDir() (string, error) {
	if d := os.Getenv("OA_INTEROP_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache dir for the interop tools (set OA_INTEROP_CACHE): %v", err)
	}
	return filepath.Join(d, "oa-interop"), nil
}

// cached returns the cache folder key, filling it with fill first when it
// does not hold bin yet. fill writes into a fresh temporary folder beside
// it, which is then renamed into place: a folder under its final name is
// always complete. When another process renamed its folder first, this
// one's is removed and the winner's used.
func cached(key, bin string, fill func(tmp string) error) (string, error) {
	root, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(dir, bin)); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".fill-"+key+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone after a rename; left over only on failure
	if err := fill(tmp); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(tmp, bin)); err != nil {
		return "", fmt.Errorf("filling %s left no %s", key, bin)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process won the race (the folder exists and is not
		// empty): use its complete copy.
		if _, serr := os.Stat(filepath.Join(dir, bin)); serr == nil {
			return dir, nil
		}
		if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("cache folder %s exists without %s; remove it", dir, bin)
		}
		return "", err
	}
	return dir, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
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
