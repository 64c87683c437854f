package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/internal/testkit/hosttest"
	"github.com/oa-dev/oa/internal/testkit/interoptest"
	"github.com/oa-dev/oa/internal/testkit/servetest"
	"github.com/oa-dev/oa/resolve"
)

// realClients are the MCP clients npm installs here, each with its own
// listing command and the line that says the oa-clinic entry is listed
// and connected, in the client's own words.
var realClients = []struct {
	client string
	// list is the client's listing, run in the project folder.
	list []string
	// connected matches the entry's line when the client started it and
	// it answered (for Codex, which starts nothing to list, when it is
	// listed enabled).
	connected *regexp.Regexp
	// trust, when set, records that the person trusts the project
	// folder, as the client's own first-run question does: the client
	// starts no project server of an untrusted folder.
	trust func(t *testing.T, home, dir string)
}{
	{client: "gemini-cli", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^.*oa-clinic: .*- Connected$`), trust: trustGemini},
	{client: "claude-code", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^oa-clinic: .* - ✔ Connected$`)},
	// Codex's listing starts no server: its Status column says whether
	// the entry is enabled (and `codex doctor` only counts stdio
	// servers), so "enabled", with oa's command and arguments, is the
	// most it reports.
	{client: "codex", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^oa-clinic\s+\S+/oa\s+coordinator serve --deployment clinic\s.*\senabled\s`), trust: trustCodex},
}

// TestRealClientsListInstalledEntry: `oa harness install --client C
// --deployment clinic --dir DIR` on a bound host, then the real client,
// as npm publishes it at the version interoptest pins, lists the
// installed oa-clinic entry with its own `mcp list` and reports it
// connected: the client read the file oa wrote, started `oa coordinator
// serve` as written and completed the MCP handshake. HOME and the
// client's config folder are the test's; no network, account or model is
// used. A client npm cannot install here skips, saying so.
func TestRealClientsListInstalledEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oa, installs the real MCP clients with npm and runs them")
	}
	oa := servetest.Binary(t)
	h := servetest.NewHost(t, oa, resolve.StarterRegistry(hosttest.Name))
	for _, rc := range realClients {
		t.Run(rc.client, func(t *testing.T) {
			cli := interoptest.ClientCLI(t, rc.client)
			if out, err := exec.Command(cli, "--version").CombinedOutput(); err != nil {
				t.Skipf("the pinned %s cannot run here: %v\n%s", rc.client, err, out)
			}
			home, dir := t.TempDir(), t.TempDir()
			env := clientEnv(home, "OA_HOME="+h.Home)
			if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil { // Codex refuses a CODEX_HOME that is not there
				t.Fatal(err)
			}
			if rc.trust != nil {
				rc.trust(t, home, dir)
			}

			install := exec.Command(oa, "harness", "install", "--client", rc.client, "--deployment", "clinic", "--dir", dir)
			install.Env = env
			if out, err := install.CombinedOutput(); err != nil {
				t.Fatalf("oa harness install --client %s: %v\n%s", rc.client, err, out)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			list := exec.CommandContext(ctx, cli, rc.list...)
			list.Dir, list.Env = dir, env
			out, err := list.CombinedOutput()
			t.Logf("%s %s:\n%s", filepath.Base(cli), strings.Join(rc.list, " "), out)
			if err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(cli), strings.Join(rc.list, " "), err)
			}
			if !rc.connected.Match(out) {
				t.Fatalf("%s does not list oa-clinic as connected (want a line matching %s)", rc.client, rc.connected)
			}
		})
	}
}

// clientEnv is this process's environment with HOME and every client's
// own config folder in home, and nothing that would reach a network
// account: the clients read only what the test wrote.
func clientEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "XDG_CONFIG_HOME", k == "XDG_DATA_HOME", k == "XDG_STATE_HOME", k == "XDG_CACHE_HOME",
			k == "CLAUDE_CONFIG_DIR", k == "CODEX_HOME", k == "GEMINI_CLI_HOME", k == "OA_HOME",
			strings.HasSuffix(k, "_API_KEY"), strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "GEMINI_"), strings.HasPrefix(k, "GOOGLE_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"CODEX_HOME="+filepath.Join(home, ".codex"),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "NO_COLOR=1")
	return append(env, extra...)
}

// trustGemini trusts dir as Gemini CLI's folder-trust dialog does, in
// ~/.gemini/trustedFolders.json: without it Gemini CLI lists the entry
// "Disabled" ("MCP servers are configured but disabled because this
// folder is untrusted").
func trustGemini(t *testing.T, home, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{dir: "TRUST_FOLDER"})
	if err := os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// trustCodex trusts dir as Codex's first-run question does, in
// $CODEX_HOME/config.toml: Codex reads a project's .codex/config.toml
// only in a trusted project.
func trustCodex(t *testing.T, home, dir string) {
	t.Helper()
	b := fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", dir)
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
}
