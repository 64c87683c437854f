package interoptest

import (
	"context"
	"crypto/sha256"
	_ "embed" // the MCP clients' pinned package files
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The MCP clients oa harness install writes for, as npm publishes them,
// each pinned by its own package-lock.json under npm/CLIENT and
// installed with npm ci: the real client's own `mcp list` reads the
// installed entry in TestRealClientsListInstalledEntry.
var (
	//go:embed npm/claude-code/package.json
	claudePackage []byte
	//go:embed npm/claude-code/package-lock.json
	claudeLock []byte
	//go:embed npm/gemini-cli/package.json
	geminiPackage []byte
	//go:embed npm/gemini-cli/package-lock.json
	geminiLock []byte
	//go:embed npm/codex/package.json
	codexPackage []byte
	//go:embed npm/codex/package-lock.json
	codexLock []byte
)

// npmClient is one MCP client installed from npm.
type npmClient struct {
	pkg, lock []byte
	// entry is its command under node_modules/.bin.
	entry string
	// after runs in the filled folder after npm ci, offline: Claude
	// Code's own install.cjs links its platform binary (from the
	// optional dependency npm ci installed) over the bin stub, which
	// npm ci --ignore-scripts left.
	after []string
}

// Clients are the MCP clients ClientCLI knows, by oa's --client name.
var clients = map[string]npmClient{
	"claude-code": {pkg: claudePackage, lock: claudeLock, entry: "claude", after: []string{"node", filepath.Join("node_modules", "@anthropic-ai", "claude-code", "install.cjs")}},
	"gemini-cli":  {pkg: geminiPackage, lock: geminiLock, entry: "gemini"},
	"codex":       {pkg: codexPackage, lock: codexLock, entry: "codex"},
}

// ClientNames are the MCP clients EnsureClient installs, in the order
// interoptools fills them.
var ClientNames = []string{"gemini-cli", "codex", "claude-code"}

// ClientInstallTimeout bounds one client's npm ci (and Claude Code's
// link step): a registry that hangs fails the fill instead of holding
// .ci/run.
const ClientInstallTimeout = 10 * time.Minute

// ClientCLI returns the path of the real MCP client's command (claude,
// gemini, codex) for oa's --client name (claude-code, gemini-cli,
// codex), at the version npm/CLIENT/package-lock.json pins, installed
// with npm ci into the cache the first time. OA_CLIENT_<NAME> (as
// OA_CLIENT_CLAUDE_CODE) may name an installed one. It skips the test,
// naming what is missing, when npm is not installed or cannot install
// the client here.
func ClientCLI(t testing.TB, client string) string {
	t.Helper()
	if p := os.Getenv(ClientEnv(client)); p != "" {
		return p
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("npm is not installed (needed once, to install the pinned %s)", client)
	}
	p, err := EnsureClient(client)
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		if len(msg) > 1000 {
			msg = msg[:1000] + "…"
		}
		t.Skipf("npm could not install the pinned %s here: %s", client, msg)
	}
	return p
}

// ClientEnv is the variable that may name an installed client instead.
func ClientEnv(client string) string {
	return "OA_CLIENT_" + strings.ToUpper(strings.ReplaceAll(client, "-", "_"))
}

// EnsureClient installs the pinned client into the cache when it is not
// there yet and returns the path of its command.
func EnsureClient(client string) (string, error) {
	c, ok := clients[client]
	if !ok {
		return "", fmt.Errorf("no pinned MCP client %q", client)
	}
	name := "client-" + client
	mu.Lock()
	defer mu.Unlock()
	if p, ok := paths[name]; ok {
		return p, nil
	}
	sum := sha256.Sum256(c.lock)
	bin := filepath.Join("node_modules", ".bin", c.entry)
	// The filled marker, not the bin link: Claude Code's bin is a stub
	// until its link step ran.
	const done = ".oa-filled"
	dir, err := cached(name+"-"+hex.EncodeToString(sum[:6]), done, func(tmp string) error {
		for file, b := range map[string][]byte{"package.json": c.pkg, "package-lock.json": c.lock} {
			if err := os.WriteFile(filepath.Join(tmp, file), b, 0o644); err != nil {
				return err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ClientInstallTimeout)
		defer cancel()
		steps := [][]string{{"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"}}
		if c.after != nil {
			steps = append(steps, c.after)
		}
		for _, step := range steps {
			cmd := exec.CommandContext(ctx, step[0], step[1:]...)
			cmd.Dir = tmp
			b, err := cmd.CombinedOutput()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s of the pinned %s took longer than %v", strings.Join(step[:2], " "), client, ClientInstallTimeout)
			}
			if err != nil {
				return fmt.Errorf("%s of the pinned %s: %v\n%s", strings.Join(step[:2], " "), client, err, b)
			}
		}
		if _, err := os.Stat(filepath.Join(tmp, bin)); err != nil {
			return fmt.Errorf("npm ci of the pinned %s left no %s", client, bin)
		}
		return os.WriteFile(filepath.Join(tmp, done), nil, 0o644)
	})
	if err != nil {
		return "", err
	}
	paths[name] = filepath.Join(dir, bin)
	return paths[name], nil
}
