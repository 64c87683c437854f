package harness

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/clients")

var goldenEntry = ServerEntry{
	Command: "/opt/oa/bin/oa",
	Args:    []string{"coordinator", "serve", "--deployment", "clinic"},
	Env:     map[string]string{"OA_HOME": "/srv/oa home"},
}

// unparsableAt is where each client's unparsable.in stops parsing.
var unparsableAt = map[string]string{
	ClientClaudeCode:    ":5:1",
	ClientClaudeDesktop: ":4:24",
	ClientCursor:        ":6:3",
	ClientVSCode:        ":4:29",
	ClientCodex:         ":4:23",
	ClientGeminiCLI:     ":6:21",
	ClientWindsurf:      ":6:1",
	ClientZed:           ":5:46",
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestClientConfigGolden writes the deployment's entry into each client's
// own file: a fresh one, one holding other servers, settings and comments
// (kept byte for byte but for the entry, and given back byte for byte by
// removing it), and one that does not parse (refused with its line).
func TestClientConfigGolden(t *testing.T) {
	for _, client := range Clients {
		t.Run(client, func(t *testing.T) {
			f := clientSpecs[client].format
			dir := filepath.Join("testdata", "clients", client)
			golden(t, filepath.Join(dir, "fresh.golden"), f.fresh("oa-clinic", goldenEntry))
			if client == ClientGeneric {
				return
			}
			const file = "/home/ada/project/config"
			fresh, added, err := f.put(file, nil, "oa-clinic", goldenEntry)
			if err != nil || !bytes.Equal(fresh, f.fresh("oa-clinic", goldenEntry)) {
				t.Fatalf("put into an empty file: %v\n%s", err, fresh)
			}
			if _, isJSON := f.(jsonFormat); isJSON && !added {
				t.Fatal("a fresh file's servers container is not said to be added")
			}

			in, err := os.ReadFile(filepath.Join(dir, "existing.in"))
			if err != nil {
				t.Fatal(err)
			}
			out, added, err := f.put(file, in, "oa-clinic", goldenEntry)
			if err != nil {
				t.Fatal(err)
			}
			if added {
				t.Fatal("an existing servers container is said to be added")
			}
			golden(t, filepath.Join(dir, "existing.golden"), out)
			got, err := f.get(file, out, "oa-clinic")
			if err != nil || got == nil || !sameEntry(*got, goldenEntry) {
				t.Fatalf("get after put: %+v %v", got, err)
			}
			// Installing again replaces the entry in place: nothing moves.
			again, _, err := f.put(file, out, "oa-clinic", goldenEntry)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("second put changed the file: %v\n%s", err, again)
			}
			// A changed entry is replaced, not duplicated.
			changed := goldenEntry
			changed.Command = "/usr/bin/oa"
			moved, _, err := f.put(file, out, "oa-clinic", changed)
			if err != nil || bytes.Count(moved, []byte("oa-clinic")) != bytes.Count(out, []byte("oa-clinic")) {
				t.Fatalf("put over a changed entry: %v\n%s", err, moved)
			}
			removed, empty, err := f.remove(file, out, "oa-clinic", false, f.gap(file, in, "oa-clinic"))
			if err != nil || empty || !bytes.Equal(removed, in) {
				t.Fatalf("remove does not give the original back (empty %v, %v):\n%s", empty, err, removed)
			}
			if e, err := f.get(file, removed, "oa-clinic"); e != nil || err != nil {
				t.Fatalf("entry still there after remove: %+v %v", e, err)
			}

			bad, err := os.ReadFile(filepath.Join(dir, "unparsable.in"))
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range []func() error{
				func() error { _, _, err := f.put(file, bad, "oa-clinic", goldenEntry); return err },
				func() error { _, err := f.get(file, bad, "oa-clinic"); return err },
				func() error { _, _, err := f.remove(file, bad, "oa-clinic", false, nil); return err },
			} {
				err := op()
				var be *blocking.Error
				if !errors.As(err, &be) || be.Code != blocking.HarnessClientConfigInvalid || be.Pos != file+unparsableAt[client] {
					t.Fatalf("unparsable file: %v (pos %q), want %s at %s", err, pos(be), blocking.HarnessClientConfigInvalid, file+unparsableAt[client])
				}
				if !strings.Contains(err.Error(), file) {
					t.Fatalf("refusal does not name the file: %v", err)
				}
			}
		})
	}
}

func pos(e *blocking.Error) string {
	if e == nil {
		return ""
	}
	return e.Pos
}

// TestUserLevelPaths: each user-level client's folder on each operating
// system, from the variables the client itself reads.
func TestUserLevelPaths(t *testing.T) {
	for _, c := range []struct {
		client, goos string
		env          map[string]string
		want         string
	}{
		{ClientClaudeDesktop, "darwin", map[string]string{"HOME": "/Users/ada"}, "/Users/ada/Library/Application Support/Claude"},
		{ClientClaudeDesktop, "linux", map[string]string{"HOME": "/home/ada"}, "/home/ada/.config/Claude"},
		{ClientClaudeDesktop, "linux", map[string]string{"HOME": "/home/ada", "XDG_CONFIG_HOME": "/cfg"}, "/cfg/Claude"},
		{ClientClaudeDesktop, "windows", map[string]string{"APPDATA": "/c/Users/ada/AppData/Roaming"}, "/c/Users/ada/AppData/Roaming/Claude"},
		{ClientCodex, "linux", map[string]string{"HOME": "/home/ada"}, "/home/ada/.codex"},
		{ClientCodex, "darwin", map[string]string{"HOME": "/Users/ada", "CODEX_HOME": "/opt/codex"}, "/opt/codex"},
		{ClientWindsurf, "linux", map[string]string{"HOME": "/home/ada"}, "/home/ada/.codeium/windsurf"},
		{ClientWindsurf, "windows", map[string]string{"HOME": "/ignored", "USERPROFILE": "/c/Users/ada"}, "/c/Users/ada/.codeium/windsurf"},
	} {
		m, err := NewMCPClient(MCPClientOptions{Home: "/srv/oa", Client: c.client, GOOS: c.goos, Getenv: func(k string) string { return c.env[k] }})
		if err != nil || m.Root() != filepath.FromSlash(c.want) {
			t.Errorf("%s on %s with %v: root %q, %v; want %q", c.client, c.goos, c.env, rootOf(m), err, c.want)
		}
	}
	_, err := NewMCPClient(MCPClientOptions{Home: "/srv/oa", Client: ClientCodex, Getenv: func(string) string { return "" }})
	var be *blocking.Error
	if !errors.As(err, &be) || be.Code != blocking.HarnessClientHomeUnknown {
		t.Fatalf("no HOME: %v", err)
	}
}

func rootOf(m *MCPClient) string {
	if m == nil {
		return ""
	}
	return m.Root()
}

// TestTOMLEntryForms: an entry already there as tables (with a sub-table)
// is replaced where it stands; one written as dotted keys or an inline
// table is refused, not rewritten.
func TestTOMLEntryForms(t *testing.T) {
	f := tomlFormat{table: "mcp_servers"}
	in := []byte("a = 1\n\n[mcp_servers.oa-clinic]\ncommand = \"old\"\n# mine\n\n[mcp_servers.oa-clinic.env]\nOA_HOME = \"x\"\n# kept\n[b]\nc = 2\n")
	out, _, err := f.put("config.toml", in, "oa-clinic", goldenEntry)
	if err != nil {
		t.Fatal(err)
	}
	// A comment a person put between the tables is theirs, and kept.
	want := "a = 1\n\n" + string(f.render("oa-clinic", goldenEntry)) + "# mine\n\n# kept\n[b]\nc = 2\n"
	if string(out) != want {
		t.Fatalf("replace in place:\n%s\nwant\n%s", out, want)
	}
	for _, bad := range []string{
		"[mcp_servers]\noa-clinic = { command = \"x\" }\n",
		"mcp_servers.oa-clinic.command = \"x\"\n",
		"mcp_servers = { other = { command = \"y\" } }\n",
		"[[mcp_servers]]\nname = \"x\"\n",
	} {
		_, _, err := f.put("config.toml", []byte(bad), "oa-clinic", goldenEntry)
		var be *blocking.Error
		if !errors.As(err, &be) || be.Code != blocking.HarnessClientConfigInvalid || !strings.HasPrefix(be.Pos, "config.toml:") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// FuzzClientConfig: whatever a configuration file holds, an edit either is
// refused or holds the entry and keeps everything else (put checks that
// itself), and removing the entry again leaves no entry.
func FuzzClientConfig(f *testing.F) {
	for _, c := range Clients {
		for _, name := range []string{"existing.in", "unparsable.in", "existing.golden"} {
			if b, err := os.ReadFile(filepath.Join("testdata", "clients", c, name)); err == nil {
				f.Add(b, c == ClientCodex)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, isTOML bool) {
		formats := []configFormat{mcpServers, clientSpecs[ClientVSCode].format}
		if isTOML {
			formats = []configFormat{clientSpecs[ClientCodex].format}
		}
		for _, cf := range formats {
			gap := cf.gap("f", b, "oa-clinic")
			had, _ := cf.get("f", b, "oa-clinic")
			out, added, err := cf.put("f", b, "oa-clinic", goldenEntry)
			if err != nil {
				continue
			}
			if e, err := cf.get("f", out, "oa-clinic"); err != nil || e == nil || !sameEntry(*e, goldenEntry) {
				t.Fatalf("get after put: %+v %v\n%s", e, err, out)
			}
			back, _, err := cf.remove("f", out, "oa-clinic", added, gap)
			if err != nil {
				t.Fatalf("remove after put: %v\n%s", err, out)
			}
			// A file that did not hold the entry is given back byte for byte.
			if had == nil && len(bytes.TrimSpace(b)) > 0 && !bytes.Equal(back, b) {
				t.Fatalf("install then uninstall changed the file:\n%q\n%q", b, back)
			}
			if e, err := cf.get("f", back, "oa-clinic"); e != nil || err != nil {
				t.Fatalf("entry left after remove: %+v %v", e, err)
			}
		}
	})
}

// TestZedEntryCurrentAndEarlierForm: oa writes Zed's entry flat
// (command/args/env, no "source", as Zed documents it now; main wrote
// "source": "custom", the 2025 form) and reads both forms; an entry whose
// source is another value is not oa's.
func TestZedEntryCurrentAndEarlierForm(t *testing.T) {
	f := clientSpecs[ClientZed].format
	fresh := f.fresh("oa-clinic", goldenEntry)
	if bytes.Contains(fresh, []byte(`"source"`)) {
		t.Fatalf("written with a source:\n%s", fresh)
	}
	const file = "/home/ada/project/.zed/settings.json"
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"context_servers":{"oa-clinic":{"command":"/opt/oa/bin/oa","args":["coordinator","serve","--deployment","clinic"],"env":{"OA_HOME":"/srv/oa home"}}}}`, true},
		{`{"context_servers":{"oa-clinic":{"source":"custom","command":"/opt/oa/bin/oa","args":["coordinator","serve","--deployment","clinic"],"env":{"OA_HOME":"/srv/oa home"}}}}`, true},
		{`{"context_servers":{"oa-clinic":{"source":"extension","command":"/opt/oa/bin/oa","args":["coordinator","serve","--deployment","clinic"],"env":{"OA_HOME":"/srv/oa home"}}}}`, false},
	} {
		e, err := f.get(file, []byte(tc.doc), "oa-clinic")
		if tc.ok != (err == nil && e != nil && sameEntry(*e, goldenEntry)) {
			t.Errorf("%s: %+v %v", tc.doc, e, err)
		}
	}
}

// TestCodexEntryWaitsTheLongestWait: the Codex entry carries
// tool_timeout_sec above the longest wait_seconds a run_workflow may ask
// for (main wrote none: Codex cut a call at its default of 60 s).
func TestCodexEntryWaitsTheLongestWait(t *testing.T) {
	var doc struct {
		Servers map[string]struct {
			ToolTimeoutSec int `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(clientSpecs[ClientCodex].format.fresh("oa-clinic", goldenEntry), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Servers["oa-clinic"].ToolTimeoutSec; got <= contract.WaitSecondsMax {
		t.Fatalf("tool_timeout_sec %d, want above %d", got, contract.WaitSecondsMax)
	}
}

// TestClientLayoutsGolden: where install puts each client's server
// entry, skill folder, projection and record, on Linux with HOME
// /home/ada and the project folder /home/ada/project, as each client's
// current documentation places them (testdata/clients/layouts.golden).
func TestClientLayoutsGolden(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"HOME": "/home/ada"}
	for _, client := range Clients {
		for _, dir := range []string{"/home/ada/project", ""} {
			if dir == "" && !UserLevel(client) || dir != "" && !ProjectLevel(client) {
				continue
			}
			m, err := NewMCPClient(MCPClientOptions{Home: "/srv/oa", Client: client, Dir: dir, GOOS: "linux", Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			scope := "project"
			if dir == "" {
				scope = "user"
			}
			l := m.layout("NAME", "PACKAGE")
			skill := "(none)"
			if l.SkillDir != "" {
				skill = m.path(l.SkillDir)
			}
			fmt.Fprintf(&out, "%s (%s)\n  server      %s\n  skill       %s\n  projection  %s\n  record      %s\n", client, scope, m.path(l.ServerFile), skill, m.path(l.ProjectionDir), m.path(l.RecordFile))
			if legacy, ok := m.legacyLayout(l, "PACKAGE"); ok {
				fmt.Fprintf(&out, "  legacy skill %s (read and removed)\n", m.path(legacy.SkillDir))
			}
		}
	}
	golden(t, filepath.Join("testdata", "clients", "layouts.golden"), out.Bytes())
}
