package mcpserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/contract"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
	"github.com/oa-dev/oa/testkit/interoptest"
	"github.com/oa-dev/oa/testkit/servetest"
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
	// status, when set, asks the client by other means whether it
	// connected to the entry, where its listing does not say.
	status func(t *testing.T, ctx context.Context, cli, dir string, env []string)
	// file, when set, is the file the entry was written to: the test
	// then breaks the entry's command there and the listing must not
	// say connected, so that the match above is the client's finding.
	file func(home, dir string) string
}{
	{client: "gemini-cli", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^.*oa-clinic: .*- Connected$`), trust: trustGemini,
		file: func(_, dir string) string { return filepath.Join(dir, ".gemini", "settings.json") }},
	{client: "claude-code", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^oa-clinic: .* - ✔ Connected$`),
		file: func(home, _ string) string { return filepath.Join(home, ".claude-config", ".claude.json") }},
	// Codex's listing starts no server: its Status column says whether
	// the entry is enabled (and `codex doctor` only counts stdio
	// servers). So Codex's own app-server, the JSON-RPC face its IDE
	// extension uses, is asked too: a thread started in the project (no
	// turn, no model) makes Codex start the server and report it
	// "ready", and mcpServerStatus/list gives its serverInfo and tools.
	{client: "codex", list: []string{"mcp", "list"}, connected: regexp.MustCompile(`(?m)^oa-clinic\s+\S+/oa\s+coordinator serve --deployment clinic\s.*\senabled\s`), trust: trustCodex, status: codexStatus},
}

// TestRealClientsListInstalledEntry: `oa harness install --client C
// --deployment clinic --dir DIR` on a bound host, then the real client,
// as npm publishes it at the version interoptest pins, lists the
// installed oa-clinic entry with its own `mcp list` and reports it
// connected: the client read the file oa wrote, started `oa coordinator
// serve` as written and completed the MCP handshake. Then, for Claude
// Code and Gemini CLI, the entry's command is broken in the file and the
// same listing must say otherwise (`✘ Failed to connect`,
// `- Disconnected`). HOME and the client's config folder are the test's;
// no network, account or model is used (Codex's app-server tries to reach
// its model provider in the background and goes on when it cannot). A
// client npm cannot install, or that cannot run here, skips, saying so.
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
			for _, d := range []string{".codex", ".claude-config"} { // Codex refuses a CODEX_HOME that is not there
				if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
					t.Fatal(err)
				}
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
			if rc.status != nil {
				rc.status(t, ctx, cli, dir, env)
			}
			if rc.file != nil {
				f := rc.file(home, dir)
				b, err := os.ReadFile(f)
				if err != nil || !strings.Contains(string(b), `"coordinator"`) {
					t.Fatalf("the entry in %s: %v\n%s", f, err, b)
				}
				if err := os.WriteFile(f, []byte(strings.Replace(string(b), `"coordinator"`, `"no-such-command"`, 1)), 0o600); err != nil {
					t.Fatal(err)
				}
				broken := exec.CommandContext(ctx, cli, rc.list...)
				broken.Dir, broken.Env = dir, env
				out, _ := broken.CombinedOutput()
				t.Logf("%s %s, the entry's command broken:\n%s", filepath.Base(cli), strings.Join(rc.list, " "), out)
				if rc.connected.Match(out) || !strings.Contains(string(out), "oa-clinic") {
					t.Fatalf("%s lists a broken oa-clinic as connected, or not at all", rc.client)
				}
			}
		})
	}
}

// clientEnv is this process's environment with HOME and every client's
// own config folder in home, and nothing that would reach a network
// account: the clients read only what the test wrote. CLAUDE_CONFIG_DIR
// is home/.claude-config, not ~/.claude, so that Claude Code finds oa's
// local-scope entry only if oa followed it there.
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
		"CODEX_HOME="+filepath.Join(home, ".codex"), "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude-config"),
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

// codexStatus runs `codex app-server` and starts a thread in dir (no
// turn, so no model): Codex starts the project's MCP servers and reports
// each one's startup (mcpServer/startupStatus/updated); oa-clinic must
// be "ready", and mcpServerStatus/list on the thread must give its
// serverInfo and tools, run_workflow among them.
func codexStatus(t *testing.T, ctx context.Context, cli, dir string, env []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, cli, "app-server")
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	send := func(m any) {
		t.Helper()
		b, _ := json.Marshal(m)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "oa-test", "version": "1"}}})
	send(map[string]any{"jsonrpc": "2.0", "method": "initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "thread/start", "params": map[string]any{"cwd": dir}})
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(nil, 16<<20)
	var thread, status string
	for sc.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		if msg.Error != nil {
			t.Fatalf("codex app-server: %s\nstderr:\n%s", sc.Bytes(), stderr.String())
		}
		switch {
		case msg.ID != nil && *msg.ID == 2:
			var r struct{ Thread struct{ ID string } }
			json.Unmarshal(msg.Result, &r)
			thread = r.Thread.ID
		case msg.Method == "mcpServer/startupStatus/updated":
			var p struct {
				Name, Status  string
				Error         json.RawMessage
				FailureReason json.RawMessage
			}
			json.Unmarshal(msg.Params, &p)
			if p.Name != "oa-clinic" {
				continue
			}
			t.Logf("codex app-server: mcpServer/startupStatus/updated oa-clinic %s", p.Status)
			status = p.Status
			if p.Status == "failed" {
				t.Fatalf("Codex could not start oa-clinic: %s\nstderr:\n%s", msg.Params, stderr.String())
			}
		case msg.ID != nil && *msg.ID == 3:
			var r struct {
				Data []struct {
					Name       string
					ServerInfo *struct{ Name, Version string }
					Tools      map[string]json.RawMessage
				}
			}
			json.Unmarshal(msg.Result, &r)
			for _, d := range r.Data {
				if d.Name != "oa-clinic" {
					continue
				}
				names := slices.Sorted(maps.Keys(d.Tools))
				t.Logf("codex app-server mcpServerStatus/list: oa-clinic serverInfo %+v, tools %v", d.ServerInfo, names)
				if d.ServerInfo == nil || d.ServerInfo.Name == "" || d.Tools[contract.ToolRunWorkflow] == nil {
					t.Fatalf("Codex lists oa-clinic without its server or tools: serverInfo %+v, tools %v", d.ServerInfo, names)
				}
				return
			}
			t.Fatalf("codex app-server mcpServerStatus/list has no oa-clinic: %s", sc.Bytes())
		}
		if thread != "" && status == "ready" {
			send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "mcpServerStatus/list", "params": map[string]any{"threadId": thread, "serverName": "oa-clinic"}})
			status = "asked"
		}
	}
	t.Fatalf("codex app-server ended before reporting oa-clinic (status %q): %v\nstderr:\n%s", status, sc.Err(), stderr.String())
}
