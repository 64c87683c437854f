package interoptest

import (
	"crypto/sha256"
	_ "embed" // the confinement servers' pinned package files
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ConfineServersName is the name the stock MCP servers of the
// confinement tests are filled under by interoptools.
const ConfineServersName = "confine-servers"

// The confinement servers' pinned package files (npm/confine): npm ci
// installs exactly the lock.
var (
	//go:embed npm/confine/package.json
	confinePackage []byte
	//go:embed npm/confine/package-lock.json
	confineLock []byte
)

// ConfineServers is where the stock servers of the confinement tests are
// installed: NodeModules holds the packages; Memory and Filesystem are
// the entry scripts of @modelcontextprotocol/server-memory and
// @modelcontextprotocol/server-filesystem, run with node.
type ConfineServers struct {
	NodeModules, Memory, Filesystem string
}

// confineEntry are the servers' entry scripts under node_modules.
var confineEntry = struct{ memory, filesystem string }{
	memory:     filepath.Join("@modelcontextprotocol", "server-memory", "dist", "index.js"),
	filesystem: filepath.Join("@modelcontextprotocol", "server-filesystem", "dist", "index.js"),
}

// Confine returns the pinned stock servers of the confinement tests,
// installed with npm ci into the cache the first time. It skips the test,
// as Inspector does, when npm is not installed or the npm registry cannot
// be reached for the first install.
func Confine(t testing.TB) ConfineServers {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed (needed once, to install the pinned MCP servers)")
	}
	s, err := EnsureConfineServers()
	if err != nil {
		t.Skipf("npm registry unreachable for the first install of the pinned MCP servers: %v", firstLine(err.Error()))
	}
	return s
}

// EnsureConfineServers installs the pinned servers into the cache when
// it does not hold them yet.
func EnsureConfineServers() (ConfineServers, error) {
	mu.Lock()
	defer mu.Unlock()
	sum := sha256.Sum256(confineLock)
	dir, err := cached(ConfineServersName+"-"+hex.EncodeToString(sum[:6]), filepath.Join("node_modules", confineEntry.filesystem), func(tmp string) error {
		for name, b := range map[string][]byte{"package.json": confinePackage, "package-lock.json": confineLock} {
			if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
				return err
			}
		}
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci of the pinned MCP servers: %v\n%s", err, b)
		}
		return nil
	})
	if err != nil {
		return ConfineServers{}, err
	}
	nm := filepath.Join(dir, "node_modules")
	return ConfineServers{NodeModules: nm, Memory: filepath.Join(nm, confineEntry.memory), Filesystem: filepath.Join(nm, confineEntry.filesystem)}, nil
}
