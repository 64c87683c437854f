package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestConnectionShowPrintsTheCommandLine: oa connection show prints the
// command with every argument (the script a runtime starts included),
// quoted for a shell where needed, not only how many there are.
func TestConnectionShowPrintsTheCommandLine(t *testing.T) {
	p := newPublisher(t)
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	probe := connectortest.Probe(t)
	script := filepath.Join(t.TempDir(), "my tools", "server.js")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("// the server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ok("connection", "add-stdio", "probe", "--connector", "probe.test", "--as", "Dr Ada", "--", probe, script, "--label=it's")
	out := p.ok("connection", "show", "probe")
	want := "  command    " + probe + " '" + script + "' '--label=it'\\''s'\n"
	wantHas(t, "show does not print the command line", out, want)
	wantLacks(t, "show does not print the command line", out, "args)")
}
