package harness_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/harness"
	"github.com/oa-dev/oa/projection"
	"github.com/oa-dev/oa/testkit/hosttest"
)

// clientFiles is where each client's server entry and skill folder go,
// relative to the project folder (project-level) or to HOME (user-level,
// on Linux, with no client variable set); codexProject is Codex's in a
// project folder.
var clientFiles = map[string]struct{ server, skills string }{
	harness.ClientClaudeCode:    {".mcp.json", ".claude/skills"},
	harness.ClientClaudeDesktop: {".config/Claude/claude_desktop_config.json", ""},
	harness.ClientCursor:        {".cursor/mcp.json", ".cursor/skills"},
	harness.ClientVSCode:        {".vscode/mcp.json", ".github/skills"},
	harness.ClientCodex:         {".codex/config.toml", ".agents/skills"},
	codexProject:                {".codex/config.toml", ".agents/skills"},
	harness.ClientGeminiCLI:     {".gemini/settings.json", ".gemini/skills"},
	harness.ClientWindsurf:      {".codeium/windsurf/mcp_config.json", ".codeium/windsurf/skills"},
	harness.ClientZed:           {".zed/settings.json", ""},
	harness.ClientGeneric:       {"oa-clinic.mcp.json", ""},
}

// codexProject names Codex installed into a project folder (--dir).
const codexProject = harness.ClientCodex + " (project)"

// tree lists every path under dir, slash-separated, folders ending in /.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryClientInstallsInspectsUninstalls installs the bound deployment
// into every client, in a fresh folder and then beside a person's own
// configuration: the entry lands in the client's own file, the skill where
// the client reads skills, inspect matches, and uninstall leaves the
// folders exactly as they were before.
func TestEveryClientInstallsInspectsUninstalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exe, _ := os.Executable()
	for _, name := range append(slices.Clone(harness.Clients), codexProject) {
		t.Run(name, func(t *testing.T) {
			client, inProject := strings.TrimSuffix(name, " (project)"), name == codexProject
			home, project := t.TempDir(), t.TempDir()
			env := map[string]string{"HOME": home}
			dir, base := project, project
			if harness.UserLevel(client) && !inProject {
				base = home
				if harness.ProjectLevel(client) {
					dir = ""
				}
			}
			m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: client, Dir: dir, Executable: exe, GOOS: "linux", Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			want := clientFiles[name]
			// Fresh: nothing there before, nothing left after.
			inst, err := m.Prepare(ctx, "clinic")
			mustMatch(t, inst, err)
			if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(want.server))); err != nil {
				t.Fatalf("no server entry file %s: %v", want.server, err)
			}
			if want.skills != "" {
				skill := filepath.Join(base, filepath.FromSlash(want.skills), inst.Bound.Package, projection.SkillFile)
				if _, err := os.Stat(skill); err != nil {
					t.Fatalf("no skill where %s reads skills: %v", client, err)
				}
			} else if inst.Record.SkillDir != "" {
				t.Fatalf("%s got a skill folder %s it does not read", client, inst.Record.SkillDir)
			}
			if base == home && len(tree(t, project)) != 0 {
				t.Fatalf("a user-level install wrote into the project folder: %v", tree(t, project))
			}
			if base == project && len(tree(t, home)) != 0 {
				t.Fatalf("a project install wrote into the home folder: %v", tree(t, home))
			}
			inst, err = m.Inspect(ctx, "clinic")
			mustMatch(t, inst, err)
			r, err := m.Uninstall(ctx, "clinic")
			if err != nil || r.Err() != nil {
				t.Fatalf("uninstall: %v %v", err, r.Err())
			}
			if left := tree(t, base); len(left) != 0 {
				t.Fatalf("uninstall left %v", left)
			}
			inst, err = m.Inspect(ctx, "clinic")
			if err != nil || inst.Installed || failed(inst)[harness.CheckRecord] != blocking.HarnessNotInstalled {
				t.Fatalf("inspect after uninstall: %v %v", failed(inst), err)
			}
			if client == harness.ClientGeneric {
				return
			}

			// Beside a person's configuration: kept byte for byte.
			existing, err := os.ReadFile(filepath.Join("testdata", "clients", client, "existing.in"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(base, filepath.FromSlash(want.server))
			if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, existing, 0o600); err != nil {
				t.Fatal(err)
			}
			before := tree(t, base)
			inst, err = m.Prepare(ctx, "clinic")
			mustMatch(t, inst, err)
			if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, want the file's own 0600", fi.Mode().Perm())
			}
			r, err = m.Uninstall(ctx, "clinic")
			if err != nil || r.Err() != nil {
				t.Fatalf("uninstall: %v %v", err, r.Err())
			}
			if got, _ := os.ReadFile(cfg); string(got) != string(existing) {
				t.Fatalf("uninstall did not give the configuration back:\n%s", got)
			}
			if after := tree(t, base); !slices.Equal(after, before) {
				t.Fatalf("uninstall left %v, before install %v", after, before)
			}
		})
	}
}

// TestUninstallLeavesWhatAPersonChanged: an altered skill file, a file
// added beside the projection and an edited server entry are left, named,
// with the install record; everything else goes.
func TestUninstallLeavesWhatAPersonChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := t.TempDir()
	m := f.client(t, harness.ClientCursor, dir)
	inst, err := m.Prepare(ctx, "clinic")
	mustMatch(t, inst, err)
	skill := filepath.Join(dir, ".cursor", "skills", inst.Bound.Package, projection.SkillFile)
	if err := os.WriteFile(skill, []byte("my edits"), 0o644); err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(dir, ".cursor", "oa", "clinic", "notes.md")
	if err := os.WriteFile(added, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := m.Uninstall(ctx, "clinic")
	if err != nil {
		t.Fatal(err)
	}
	if !hosttest.HasCode(t, r.Err(), blocking.HarnessUninstallIncomplete) || blocking.ExitStatus(r.Err()) != 2 {
		t.Fatalf("uninstall with changes: %v", r.Err())
	}
	left := strings.Join(r.Left, "\n")
	if !strings.Contains(left, ".cursor/skills/"+inst.Bound.Package+"/SKILL.md (altered") || !strings.Contains(left, ".cursor/oa/clinic/notes.md (added") {
		t.Fatalf("left: %v", r.Left)
	}
	for _, p := range []string{skill, added, filepath.Join(dir, ".cursor", "oa", "clinic.install.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", p, err)
		}
	}
	if got, _ := os.ReadFile(skill); string(got) != "my edits" {
		t.Fatal("an altered file was changed")
	}
	// The entry went (it was as installed); the person's files stay.
	if b, _ := os.ReadFile(filepath.Join(dir, ".cursor", "mcp.json")); strings.Contains(string(b), "oa-clinic") {
		t.Fatalf("the unchanged entry was kept: %s", b)
	}
	// Once they are moved away, uninstall finishes.
	os.Remove(skill)
	os.Remove(added)
	r, err = m.Uninstall(ctx, "clinic")
	if err != nil || r.Err() != nil {
		t.Fatalf("second uninstall: %v %v", err, r.Err())
	}
	if left := tree(t, dir); len(left) != 0 {
		t.Fatalf("left %v", left)
	}

	// An edited entry is left in place.
	inst, err = m.Prepare(ctx, "clinic")
	mustMatch(t, inst, err)
	cfg := filepath.Join(dir, ".cursor", "mcp.json")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), `"--deployment"`, `"--verbose", "--deployment"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = m.Uninstall(ctx, "clinic")
	if err != nil || !hosttest.HasCode(t, r.Err(), blocking.HarnessUninstallIncomplete) || !strings.Contains(strings.Join(r.Left, ";"), "oa-clinic in .cursor/mcp.json (changed") {
		t.Fatalf("edited entry: %+v %v %v", r, err, r.Err())
	}
	if got, _ := os.ReadFile(cfg); !strings.Contains(string(got), "--verbose") {
		t.Fatal("an edited entry was removed")
	}

	// An unparsable configuration refuses uninstall and changes nothing.
	if err := os.WriteFile(cfg, []byte("{ not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	if _, err := m.Uninstall(ctx, "clinic"); !hosttest.HasCode(t, err, blocking.HarnessClientConfigInvalid) || !strings.Contains(err.Error(), cfg+":1:") {
		t.Fatalf("unparsable configuration: %v", err)
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Fatalf("a refused uninstall changed %v to %v", before, after)
	}
}

// TestCodexLegacySkillFolder: Codex reads skills from ~/.agents/skills; an
// installation of the earlier layout, its skill in ~/.codex/skills, is
// still inspected, removed whole by uninstall, and moved by installing
// again (nothing left behind in ~/.codex/skills).
func TestCodexLegacySkillFolder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exe, _ := os.Executable()
	home := t.TempDir()
	m, err := harness.NewMCPClient(harness.MCPClientOptions{Home: f.Home, Client: harness.ClientCodex, Executable: exe, GOOS: "linux", Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := func() string {
		t.Helper()
		undo := harness.UseLegacySkills(m)
		defer undo()
		inst, err := m.Prepare(ctx, "clinic")
		mustMatch(t, inst, err)
		skill := filepath.Join(home, ".codex", "skills", inst.Bound.Package, projection.SkillFile)
		if _, err := os.Stat(skill); err != nil {
			t.Fatalf("no legacy skill: %v", err)
		}
		return inst.Bound.Package
	}

	// Read and removed whole.
	legacy()
	inst, err := m.Inspect(ctx, "clinic")
	mustMatch(t, inst, err)
	if inst.Record.SkillDir != "skills/"+inst.Bound.Package {
		t.Fatalf("legacy skill dir %q", inst.Record.SkillDir)
	}
	r, err := m.Uninstall(ctx, "clinic")
	if err != nil || r.Err() != nil {
		t.Fatalf("uninstall of the legacy layout: %v %v", err, r.Err())
	}
	if left := tree(t, home); len(left) != 0 {
		t.Fatalf("uninstall of the legacy layout left %v", left)
	}

	// Installing again moves the skill to ~/.agents/skills.
	pkg := legacy()
	inst, err = m.Prepare(ctx, "clinic")
	mustMatch(t, inst, err)
	if _, err := os.Stat(filepath.Join(home, ".agents", "skills", pkg, projection.SkillFile)); err != nil {
		t.Fatalf("no skill in ~/.agents/skills: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "skills")); err == nil {
		t.Fatalf("the legacy skill folder is left: %v", tree(t, home))
	}
	r, err = m.Uninstall(ctx, "clinic")
	if err != nil || r.Err() != nil {
		t.Fatalf("uninstall: %v %v", err, r.Err())
	}
	if left := tree(t, home); len(left) != 0 {
		t.Fatalf("uninstall left %v", left)
	}
}
