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
	wantExit(t, "install", code, 0, out, errOut)
	wantHas(t, "install", out, "installed deployment clinic into claude-code", "oa-clinic in .mcp.json")
	var cfg struct {
		MCPServers map[string]harness.ServerEntry `json:"mcpServers"`
	}
	b, _ := os.ReadFile(mcp)
	wantJSON(t, ".mcp.json", string(b), &cfg)
	if got := cfg.MCPServers["notes"].Command; got != "notes-server" {
		t.Fatalf("the other server was not kept: notes command = %q, want notes-server:\n%s", got, b)
	}
	exe, _ := os.Executable()
	e := cfg.MCPServers["oa-clinic"]
	if e.Command != exe {
		t.Errorf("server entry command = %q, want %q", e.Command, exe)
	}
	if args := strings.Join(e.Args, " "); args != "coordinator serve --deployment clinic" {
		t.Errorf("server entry args = %q, want %q", args, "coordinator serve --deployment clinic")
	}
	if e.Env["OA_HOME"] != h.Home {
		t.Errorf("server entry OA_HOME = %q, want %q", e.Env["OA_HOME"], h.Home)
	}
	if t.Failed() {
		t.FailNow()
	}

	out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir, "--json")
	var inst harness.Installation
	wantExit(t, "inspect --json", code, 0, out, errOut)
	wantJSON(t, "inspect --json", out, &inst)
	if !inst.Matches {
		t.Errorf("inspect --json: matches = false, want true:\n%s", out)
	}
	if !inst.Installed {
		t.Errorf("inspect --json: installed = false, want true:\n%s", out)
	}
	if len(inst.Checks) != 8 {
		t.Errorf("inspect --json: %d checks, want 8:\n%s", len(inst.Checks), out)
	}
	if t.Failed() {
		t.FailNow()
	}
	out, _, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	wantExit(t, "inspect text", code, 0, out, "")
	wantHas(t, "inspect text", out, "matches the binding")
	wantLacks(t, "inspect text", out, "CHANGED")

	// Rebound with another model: inspect names the binding link, exit 2.
	rebind(t, h, host, "other-model")
	out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	wantExit(t, "inspect after rebind", code, 2, out, errOut)
	wantHas(t, "inspect after rebind (stdout)", out, "CHANGED  binding_link")
	wantHas(t, "inspect after rebind (stderr)", errOut, "harness_binding_changed")
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
	wantExit(t, "inspect after tamper", code, 2, out, errOut)
	wantJSON(t, "inspect after tamper (stderr)", errOut, &refused)
	if len(refused.Refusals) != 1 {
		t.Fatalf("inspect after tamper: %d refusals, want 1:\n%s", len(refused.Refusals), errOut)
	}
	if r := refused.Refusals[0]; r.Code != "harness_files_changed" {
		t.Errorf("inspect after tamper: refusal code = %q, want harness_files_changed", r.Code)
	}
	if r := refused.Refusals[0]; r.Path != "files" {
		t.Errorf("inspect after tamper: refusal path = %q, want files", r.Path)
	}
	if r := refused.Refusals[0]; r.Fix == "" {
		t.Errorf("inspect after tamper: refusal has no fix:\n%s", errOut)
	}
	if t.Failed() {
		t.FailNow()
	}
	wantJSON(t, "inspect --json after tamper", out, &inst)
	if inst.Matches {
		t.Fatalf("inspect --json after tamper: matches = true, want false:\n%s", out)
	}

	// The entry deleted.
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"notes":{"command":"notes-server","args":[]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	wantExit(t, "inspect without the entry", code, 2, "", errOut)
	wantHas(t, "inspect without the entry", errOut, "harness_server_entry_missing")
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
	wantExit(t, "install", code, 0, out, errOut)
	wantHas(t, "install", out, "oa-clinic in ~/.claude.json")
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
	wantJSON(t, "~/.claude.json", string(b), &doc)
	if doc.Projects[real].MCPServers["oa-clinic"].Env["OA_HOME"] == "" {
		t.Fatalf("~/.claude.json: no OA_HOME in project %s's oa-clinic entry:\n%s", real, b)
	}
	if out, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--deployment", "clinic", "--dir", dir); code != 0 {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	// The other scope names this one.
	_, errOut, code = runCLI(t, "harness", "inspect", "--client", "claude-code", "--scope", "project", "--deployment", "clinic", "--dir", dir)
	wantExit(t, "inspect --scope project", code, 2, "", errOut)
	wantHas(t, "inspect --scope project", errOut, "installed in Claude Code's local scope", "give --scope local")
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
		_, errOut, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("oa %v: exit code %d, want 2: %s", args, code, errOut)
		}
		for _, want := range []string{"usage error", "--scope"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("oa %v: want %q in:\n%s", args, want, errOut)
			}
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
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("oa %v: exit code %d, want 2: %s", c.args, code, errOut)
		}
		if !strings.Contains(errOut, c.code) {
			t.Errorf("oa %v: want %q in:\n%s", c.args, c.code, errOut)
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
	wantExit(t, "install", code, 0, out, errOut)
	wantHas(t, "install", out, "config.toml", "~/.agents/skills/")
	if skills, _ := os.ReadDir(filepath.Join(home, ".agents", "skills")); len(skills) != 1 {
		t.Fatalf("no skill in ~/.agents/skills: %v", skills)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(b), mine) {
		t.Fatalf("config.toml does not keep the person's settings first:\n%s", b)
	}
	wantHas(t, "config.toml", string(b), "[mcp_servers.oa-clinic]")
	if out, errOut, code = runCLI(t, "harness", "inspect", "--client", "codex", "--deployment", "clinic"); code != 0 {
		t.Fatalf("inspect: %d %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "harness", "uninstall", "--client", "codex", "--deployment", "clinic")
	wantExit(t, "uninstall", code, 0, out, errOut)
	wantHas(t, "uninstall", out, "removed  oa-clinic in config.toml")
	if b, _ := os.ReadFile(cfg); string(b) != mine {
		t.Fatalf("uninstall did not give config.toml back:\n%s", b)
	}
	// A broken config.toml is refused with its path and line, unchanged.
	const broken = "model = \"gpt-5-codex\n"
	if err := os.WriteFile(cfg, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "harness", "install", "--client", "codex", "--deployment", "clinic")
	wantExit(t, "broken config.toml", code, 2, "", errOut)
	wantHas(t, "broken config.toml", errOut, cfg+":1:", "harness_client_config_invalid")
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
	wantExit(t, "install", code, 0, out, errOut)
	wantHas(t, "install", out, "oa-clinic in .codex/config.toml", "skill        .agents/skills/")
	b, err := os.ReadFile(filepath.Join(dir, ".codex", "config.toml"))
	if err != nil {
		t.Fatalf("project config.toml: %v", err)
	}
	wantHas(t, "project config.toml", string(b), "[mcp_servers.oa-clinic]")
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
	if r, want := row("claude-code local"), "claude-code local yes "+filepath.Join(home, ".claude.json"); !strings.HasPrefix(r, want) {
		t.Fatalf("claude-code local row = %q, want prefix %q", r, want)
	}
	if r := row("claude-code local"); !strings.HasSuffix(r, "oa-clinic matches") {
		t.Fatalf("claude-code local row = %q, want suffix %q", r, "oa-clinic matches")
	}
	if r := row("claude-code project"); !strings.HasPrefix(r, "claude-code project no "+filepath.Join(dir, ".mcp.json")+" (none) -") {
		t.Fatalf("claude-code project row: %s", r)
	}
	wantHas(t, "gemini-cli row", row("gemini-cli"), "yes ("+filepath.Join(bin, "gemini")+")")
	if r := row("gemini-cli"); !strings.HasSuffix(r, "(none) -") {
		t.Fatalf("gemini-cli row = %q, want suffix %q", r, "(none) -")
	}
	if r := row("windsurf"); !strings.HasPrefix(r, "windsurf user no ") {
		t.Fatalf("windsurf row: %s", r)
	}
	out, errOut, code = runCLI(t, "harness", "list", "--dir", dir, "--json")
	var got struct {
		Clients []harness.ClientListing `json:"clients"`
	}
	wantExit(t, "list --json", code, 0, out, errOut)
	wantJSON(t, "list --json", out, &got)
	if len(got.Clients) != 10 {
		t.Fatalf("list --json: %d clients, want 10:\n%s", len(got.Clients), out)
	}
	c := got.Clients[0]
	if c.Client != "claude-code" {
		t.Errorf("first client in JSON = %q, want claude-code", c.Client)
	}
	if c.Scope != harness.ScopeLocal {
		t.Errorf("claude-code in JSON: scope = %q, want %q", c.Scope, harness.ScopeLocal)
	}
	if len(c.Entries) != 1 {
		t.Fatalf("claude-code in JSON: %d entries, want 1: %+v", len(c.Entries), c.Entries)
	}
	if c.Entries[0].State != harness.EntryMatches {
		t.Errorf("claude-code in JSON: entry state = %q, want %q", c.Entries[0].State, harness.EntryMatches)
	}
	if t.Failed() {
		t.FailNow()
	}
	_, errOut, code = runCLI(t, "harness", "list", "--dir", filepath.Join(dir, "nowhere"))
	wantExit(t, "list --dir nowhere", code, 2, "", errOut)
	wantHas(t, "list --dir nowhere", errOut, "is not a folder")
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
	wantExit(t, "empty transcript", code, 0, out, "")
	wantHas(t, "empty transcript", out, "no runs")

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
	if len(lines) != 4 {
		t.Fatalf("transcript has %d lines, want 4 (a header and three runs):\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("transcript header = %q, want prefix TIME", lines[0])
	}
	for i, want := range []string{"done", "did_not_run", "needs_review"} {
		wantHas(t, fmt.Sprintf("transcript line %d", i+1), lines[i+1], ids[i], " "+want+" ", "append_triage_note", "sha256:")
	}
	jsonOut, _, code := runCLI(t, "harness", "transcript", "--deployment", "clinic", "--limit", "1", "--json")
	var tr struct {
		Runs []harness.TurnRecord `json:"runs"`
	}
	wantExit(t, "transcript --limit 1 --json", code, 0, jsonOut, "")
	wantJSON(t, "transcript --limit 1 --json", jsonOut, &tr)
	if len(tr.Runs) != 1 {
		t.Fatalf("transcript --limit 1 --json: %d runs, want 1:\n%s", len(tr.Runs), jsonOut)
	}
	if tr.Runs[0].RunID != ids[2] {
		t.Fatalf("transcript --limit 1 --json: run %q, want the latest %q", tr.Runs[0].RunID, ids[2])
	}
	for _, s := range []string{out, jsonOut} {
		wantLacks(t, "transcript leaks an input value", s, planted, "4471", "AB-1234")
	}
}
