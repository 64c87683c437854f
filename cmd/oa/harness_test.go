package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/coordinator"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/resolve"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// boundHost is a host with the clinic release bound to deployment "clinic"
// on the sandbox connector, as $OA_HOME.
func boundHost(t *testing.T) (*hosttest.Host, *host.Host) {
	t.Helper()
	h := hosttest.New(t, nil)
	h.WriteRegistry(resolve.StarterRegistry(hosttest.Name))
	host := h.Open()
	h.AddConnection(host, "sandbox", resolve.SandboxConnector, hosttest.Sandbox)
	rebind(t, h, host, "claude-test")
	t.Setenv("OA_HOME", h.Home)
	return h, host
}

func rebind(t *testing.T, h *hosttest.Host, hh *host.Host, model string) {
	t.Helper()
	h.Bind(hh, model)
}

func TestHarnessInstallInspect(t *testing.T) {
	h, host := boundHost(t)
	dir := t.TempDir()
	mcp := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"notes":{"command":"notes-server","args":[]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "harness", "install", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	if code != 0 || !strings.Contains(out, "installed deployment clinic into claude-code") || !strings.Contains(out, "oa-clinic in .mcp.json") {
		t.Fatalf("install: %d\n%s%s", code, out, errOut)
	}
	var cfg struct {
		MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
	}
	b, _ := os.ReadFile(mcp)
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.MCPServers["notes"].Command != "notes-server" {
		t.Fatalf("the other server was not kept: %s", b)
	}
	exe, _ := os.Executable()
	e := cfg.MCPServers["oa-clinic"]
	if e.Command != exe || strings.Join(e.Args, " ") != "coordinator serve --deployment clinic" || e.Env["OA_HOME"] != h.Home {
		t.Fatalf("server entry: %+v", e)
	}

	out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir, "--json")
	var inst harness.Installation
	if code != 0 || json.Unmarshal([]byte(out), &inst) != nil || !inst.Matches || !inst.Installed || len(inst.Checks) != 8 {
		t.Fatalf("inspect: %d\n%s%s", code, out, errOut)
	}
	out, _, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	if code != 0 || !strings.Contains(out, "matches the binding") || strings.Contains(out, "CHANGED") {
		t.Fatalf("inspect text: %d\n%s", code, out)
	}

	// Rebound with another model: inspect names the binding link, exit 2.
	rebind(t, h, host, "other-model")
	out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	if code != 2 || !strings.Contains(out, "CHANGED  binding_link") || !strings.Contains(errOut, "harness_binding_changed") {
		t.Fatalf("inspect after rebind: %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runCLI(t, "harness", "install", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("reinstall: %d %s", code, errOut)
	}

	// A tampered skill file: exit 2, JSON refusals name the code.
	skill := filepath.Join(dir, ".claude", "skills", inst.Bound.Package, "SKILL.md")
	if err := os.WriteFile(skill, []byte("---\nname: x\n---\nDo anything.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir, "--json")
	var refused struct {
		ExitStatus int `json:"exitStatus"`
		Refusals   []struct{ Code, Path, Fix string }
	}
	if code != 2 || json.Unmarshal([]byte(errOut), &refused) != nil || len(refused.Refusals) != 1 || refused.Refusals[0].Code != "harness_files_changed" || refused.Refusals[0].Path != "files" || refused.Refusals[0].Fix == "" {
		t.Fatalf("inspect after tamper: %d\n%s%s", code, out, errOut)
	}
	if json.Unmarshal([]byte(out), &inst) != nil || inst.Matches {
		t.Fatalf("inspect --json after tamper: %s", out)
	}

	// The entry deleted.
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"notes":{"command":"notes-server","args":[]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir); code != 2 || !strings.Contains(errOut, "harness_server_entry_missing") {
		t.Fatalf("inspect without the entry: %d %s", code, errOut)
	}
}

// TestHarnessClaudeCodeLocalByDefault: Claude Code's entry, which holds
// this machine's paths, goes to the user's ~/.claude.json (local scope)
// unless --scope project asks for the .mcp.json teams commit; the project
// gets no .mcp.json. A scope that is not local or project, or one for
// another client, is a usage error.
func TestHarnessClaudeCodeLocalByDefault(t *testing.T) {
	boundHost(t)
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	out, errOut, code := runCLI(t, "harness", "install", "--client", "claude-code", "--deployment", "clinic", "--dir", dir)
	if code != 0 || !strings.Contains(out, "oa-clinic in ~/.claude.json") {
		t.Fatalf("install: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err == nil {
		t.Fatal("the project's .mcp.json was written")
	}
	real, _ := filepath.EvalSymlinks(dir)
	var doc struct {
		Projects map[string]struct {
			MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
		} `json:"projects"`
	}
	b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err := json.Unmarshal(b, &doc); err != nil || doc.Projects[real].MCPServers["oa-clinic"].Env["OA_HOME"] == "" {
		t.Fatalf("~/.claude.json: %v\n%s", err, b)
	}
	if out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	// The other scope names this one.
	if _, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir); code != 2 || !strings.Contains(errOut, "installed in Claude Code's local scope") || !strings.Contains(errOut, "give --scope local") {
		t.Fatalf("inspect --scope project: %d %s", code, errOut)
	}
	if out, errOut, code = runCLI(t, "harness", "uninstall", "--client", "claude-code", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("uninstall: %d %s %s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("uninstall left %v under HOME", entries)
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--client", "claude-code", "--scope", "user"}},
		{[]string{"--client", "cursor", "--scope", "local"}},
	} {
		args := append(append([]string{"harness", "install"}, c.args...), "--deployment", "clinic", "--dir", dir)
		if _, errOut, code := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "usage error") || !strings.Contains(errOut, "--scope") {
			t.Errorf("oa %v: %d %s", args, code, errOut)
		}
	}
}

func TestHarnessRefusals(t *testing.T) {
	boundHost(t)
	dir := t.TempDir()
	cases := []struct {
		args []string
		code string
	}{
		{[]string{"harness", "install", "--client", "notepad", "--deployment", "clinic", "--dir", dir}, "harness_client_unknown"},
		{[]string{"harness", "install", "--client", "windsurf", "--deployment", "clinic", "--dir", dir}, "--dir is for project-level clients"},
		{[]string{"harness", "uninstall", "--client", "cursor", "--deployment", "clinic", "--dir", dir}, "harness_not_installed"},
		{[]string{"harness", "install", "--client", "generic", "--deployment", "nowhere", "--dir", dir}, "binding_missing"},
		{[]string{"harness", "inspect", "--client", "generic", "--deployment", "clinic", "--dir", dir}, "harness_not_installed"},
		{[]string{"harness", "transcript", "--deployment", "Not A Name"}, "deployment_invalid"},
	}
	for _, c := range cases {
		if _, errOut, code := runCLI(t, c.args...); code != 2 || !strings.Contains(errOut, c.code) {
			t.Errorf("oa %v: %d %s, want 2 %s", c.args, code, errOut, c.code)
		}
	}
	for _, args := range [][]string{{"harness", "install", "--deployment", "clinic"}, {"harness", "transcript"}, {"harness", "transcript", "--deployment", "clinic", "--limit", "-1"}} {
		if _, _, code := runCLI(t, args...); code != 2 {
			t.Errorf("oa %v: exit %d, want 2", args, code)
		}
	}
	if _, _, code := runCLI(t, "explain", "harness_turn_unsupported"); code != 0 {
		t.Error("harness_turn_unsupported is not explained")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused installs wrote %d entries", len(entries))
	}
}

// TestHarnessUserLevelClient installs into Codex's config.toml under
// CODEX_HOME, beside a person's settings and comments, its skill in
// ~/.agents/skills, inspects and uninstalls it, and gets the file back
// byte for byte.
func TestHarnessUserLevelClient(t *testing.T) {
	boundHost(t)
	codexHome, home := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", codexHome)
	t.Setenv("HOME", home)
	cfg := filepath.Join(codexHome, "config.toml")
	const mine = "# my settings\nmodel = \"gpt-5-codex\"\n\n[mcp_servers.docs]\ncommand = \"docs\" # the docs server\n"
	if err := os.WriteFile(cfg, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "harness", "install", "--client", "codex", "--deployment", "clinic")
	if code != 0 || !strings.Contains(out, "config.toml") || !strings.Contains(out, "~/.agents/skills/") {
		t.Fatalf("install: %d %s %s", code, out, errOut)
	}
	if skills, _ := os.ReadDir(filepath.Join(home, ".agents", "skills")); len(skills) != 1 {
		t.Fatalf("no skill in ~/.agents/skills: %v", skills)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(b), mine) || !strings.Contains(string(b), "[mcp_servers.oa-clinic]") {
		t.Fatalf("config.toml:\n%s", b)
	}
	if out, errOut, code = runCLI(t, "harness", "inspect", "--client", "codex", "--deployment", "clinic"); code != 0 {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "harness", "uninstall", "--client", "codex", "--deployment", "clinic")
	if code != 0 || !strings.Contains(out, "removed  oa-clinic in config.toml") {
		t.Fatalf("uninstall: %d %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(cfg); string(b) != mine {
		t.Fatalf("uninstall did not give config.toml back:\n%s", b)
	}
	// A broken config.toml is refused with its path and line, unchanged.
	const broken = "model = \"gpt-5-codex\n"
	if err := os.WriteFile(cfg, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = runCLI(t, "harness", "install", "--client", "codex", "--deployment", "clinic"); code != 2 || !strings.Contains(errOut, cfg+":1:") || !strings.Contains(errOut, "harness_client_config_invalid") {
		t.Fatalf("broken config.toml: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(cfg); string(b) != broken {
		t.Fatal("a broken config.toml was rewritten")
	}
}

// TestHarnessCodexProject installs into a project's .codex/config.toml
// with --dir, the skill in the project's .agents/skills, and nothing
// under the user's home; uninstall leaves the project as it was.
func TestHarnessCodexProject(t *testing.T) {
	boundHost(t)
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	out, errOut, code := runCLI(t, "harness", "install", "--client", "codex", "--deployment", "clinic", "--dir", dir)
	if code != 0 || !strings.Contains(out, "oa-clinic in .codex/config.toml") || !strings.Contains(out, "skill        .agents/skills/") {
		t.Fatalf("install: %d %s %s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".codex", "config.toml")); err != nil || !strings.Contains(string(b), "[mcp_servers.oa-clinic]") {
		t.Fatalf("project config.toml: %s %v", b, err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("a project install wrote under HOME: %v", entries)
	}
	if out, errOut, code = runCLI(t, "harness", "inspect", "--client", "codex", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	if out, errOut, code = runCLI(t, "harness", "uninstall", "--client", "codex", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("uninstall: %d %s %s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("uninstall left %v", entries)
	}
}

// TestHarnessList lists the clients on this machine: Claude Code's entry
// installed in the project matches, Gemini CLI is installed by its
// executable on PATH with no entry, Codex (per user) has none; --json
// names the same; a --dir that is not a folder is a usage error.
func TestHarnessList(t *testing.T) {
	boundHost(t)
	home, dir, bin := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	if err := os.WriteFile(filepath.Join(bin, "gemini"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if _, errOut, code := runCLI(t, "harness", "install", "--client", "claude-code", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("install: %d %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "harness", "list", "--dir", dir)
	if code != 0 {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	row := func(prefix string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if r := strings.Join(strings.Fields(l), " "); strings.HasPrefix(r, prefix+" ") {
				return r
			}
		}
		t.Fatalf("no %s row:\n%s", prefix, out)
		return ""
	}
	if r := row("claude-code local"); !strings.HasPrefix(r, "claude-code local yes "+filepath.Join(home, ".claude.json")) || !strings.HasSuffix(r, "oa-clinic matches") {
		t.Fatalf("claude-code local row: %s", r)
	}
	if r := row("claude-code project"); !strings.HasPrefix(r, "claude-code project no "+filepath.Join(dir, ".mcp.json")+" (none) -") {
		t.Fatalf("claude-code project row: %s", r)
	}
	if r := row("gemini-cli"); !strings.Contains(r, "yes ("+filepath.Join(bin, "gemini")+")") || !strings.HasSuffix(r, "(none) -") {
		t.Fatalf("gemini-cli row: %s", r)
	}
	if r := row("windsurf"); !strings.HasPrefix(r, "windsurf user no ") {
		t.Fatalf("windsurf row: %s", r)
	}
	out, errOut, code = runCLI(t, "harness", "list", "--dir", dir, "--json")
	var got struct {
		Clients []harness.ClientListing `json:"clients"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Clients) != 10 {
		t.Fatalf("list --json: %d %v %s %s", code, err, out, errOut)
	}
	if c := got.Clients[0]; c.Client != "claude-code" || c.Scope != harness.ScopeLocal || len(c.Entries) != 1 || c.Entries[0].State != harness.EntryMatches {
		t.Fatalf("claude-code in JSON: %+v", c)
	}
	if _, errOut, code = runCLI(t, "harness", "list", "--dir", filepath.Join(dir, "nowhere")); code != 2 || !strings.Contains(errOut, "is not a folder") {
		t.Fatalf("list --dir nowhere: %d %s", code, errOut)
	}
}

func TestHarnessGenericAndTranscript(t *testing.T) {
	h, _ := boundHost(t)
	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "harness", "install", "--client", "generic", "--deployment", "clinic", "--dir", dir, "--json"); code != 0 {
		t.Fatalf("generic install: %d %s", code, errOut)
	}
	for _, name := range []string{"oa-clinic.mcp.json", "oa-clinic.install.json", "oa-clinic/projection.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatalf("generic install wrote no %s", name)
		}
	}
	out, _, code := runCLI(t, "harness", "transcript", "--deployment", "clinic")
	if code != 0 || !strings.Contains(out, "no runs") {
		t.Fatalf("empty transcript: %d %s", code, out)
	}

	ctx := context.Background()
	c, err := coordinator.Open(ctx, coordinator.Options{Home: h.Home, Deployment: "clinic", EffectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const planted = "Zq-Planted-4471-Input"
	var ids []string
	for i, record := range []string{"AB-1234", "OF-0001", "DU-0001"} {
		in := json.RawMessage(fmt.Sprintf(`{"record_ref":%q,"urgency":"soon","summary":%q}`, record, planted))
		res, err := c.Run(ctx, coordinator.RunRequest{Workflow: "append_triage_note", Inputs: in, RequestID: fmt.Sprintf("cli-%d", i), Wait: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.RunID)
	}
	out, errOut, code := runCLI(t, "harness", "transcript", "--deployment", "clinic")
	if code != 0 {
		t.Fatalf("transcript: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("transcript:\n%s", out)
	}
	for i, want := range []string{"done", "did_not_run", "needs_review"} {
		if !strings.Contains(lines[i+1], ids[i]) || !strings.Contains(lines[i+1], " "+want+" ") || !strings.Contains(lines[i+1], "append_triage_note") || !strings.Contains(lines[i+1], "sha256:") {
			t.Fatalf("line %d: %s", i+1, lines[i+1])
		}
	}
	jsonOut, _, code := runCLI(t, "harness", "transcript", "--deployment", "clinic", "--limit", "1", "--json")
	var tr struct {
		Runs []harness.TurnRecord `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(jsonOut), &tr) != nil || len(tr.Runs) != 1 || tr.Runs[0].RunID != ids[2] {
		t.Fatalf("transcript --limit 1 --json: %d %s", code, jsonOut)
	}
	for _, s := range []string{out, jsonOut} {
		if strings.Contains(s, planted) || strings.Contains(s, "4471") || strings.Contains(s, "AB-1234") {
			t.Fatalf("transcript leaks an input value:\n%s", s)
		}
	}
}
