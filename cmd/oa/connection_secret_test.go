package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectionAddRefusesSecretByName runs issue 14's case through the
// CLI: `oa connection add … -- env SECRET_TOKEN=hunter2 server` (and the
// flag forms) exit 2 naming the word and --env / --secret-file, and the
// value appears in no output and in no file under OA_HOME, the SQLite
// database included.
func TestConnectionAddRefusesSecretByName(t *testing.T) {
	const secret = "hunter2"
	p := newPublisher(t)
	home := os.Getenv("OA_HOME")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	add := []string{"connection", "add-stdio", "crm", "--connector", "crm.test", "--as", "Dr Ada", "--"}
	for _, tc := range []struct {
		line []string
		word string
	}{
		{[]string{"env", "SECRET_TOKEN=" + secret, "server"}, "args[0]"},
		{[]string{"server", "--token=" + secret}, "args[0]"},
		{[]string{"server", "--password", secret}, "args[1]"},
	} {
		out := p.refused("connection_invalid", append(add, tc.line...)...)
		if strings.Contains(out, secret) {
			t.Fatalf("refusal echoes the value:\n%s", out)
		}
		wantHas(t, "refusal does not name the argument and the fix", out, tc.word, "--env NAME", "--secret-file")
	}
	if list := p.ok("connection", "list", "--json"); strings.TrimSpace(list) != "[]" {
		t.Fatalf("a refused add recorded a connection: %s", list)
	}
	err := filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
