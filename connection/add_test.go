package connection_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/pipeline"
)

// newHost initializes a real host (keys, policy, SQLite store) in a new
// folder and opens it.
func newHost(t *testing.T) (string, *host.Host) {
	t.Helper()
	home := t.TempDir()
	publisher, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	authority, err := pipeline.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Init(home, host.InitOptions{Host: "test-host", Publishers: map[string][]byte{"publisher": publisher.Public}, Authorities: map[string][]byte{"authority": authority.Public}}); err != nil {
		t.Fatal(err)
	}
	h, err := host.Open(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	return home, h
}

// filesHolding returns the files under dir whose bytes contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestAddRefusesSecretOnCommandLine: a short secret passed by name on a
// connection's command line is refused at its word, the refusal does not
// carry it, and nothing is recorded: no file under the host folder (the
// SQLite database included) holds it.
func TestAddRefusesSecretOnCommandLine(t *testing.T) {
	const secret = "hunter2"
	home, h := newHost(t)
	ctx := context.Background()
	change := connection.Change{By: "Test Operator", Now: time.Now()}
	for _, tc := range []struct {
		cfg  connector.Config
		path string
	}{
		{connector.Config{Command: "env", Args: []string{"SECRET_TOKEN=" + secret, "server"}}, "args[0]"},
		{connector.Config{Command: "server", Args: []string{"--verbose", "--token=" + secret}}, "args[1]"},
		{connector.Config{Command: "server", Args: []string{"--password", secret}}, "args[1]"},
		{connector.Config{Command: "server", Args: []string{"--header", "X-Api-Key: " + secret}}, "args[1]"},
		{connector.Config{Command: "API_KEY=" + secret}, "command"},
	} {
		_, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: tc.cfg}, change)
		l := blocking.Refusals(err)
		if len(l) != 1 || l[0].Code != blocking.ConnectionInvalid || l[0].Path != tc.path {
			t.Errorf("Add(%q %q) = %v; want one %s at %s", tc.cfg.Command, tc.cfg.Args, err, blocking.ConnectionInvalid, tc.path)
			continue
		}
		if text := err.Error(); strings.Contains(text, secret) || !strings.Contains(text, "--env NAME") {
			t.Errorf("refusal echoes the value or names no fix: %s", text)
		}
	}
	list, err := connection.List(ctx, h)
	if err != nil || len(list) != 0 {
		t.Fatalf("refused adds recorded %v, %v", list, err)
	}
	// The same server configured the right way is recorded.
	if _, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: connector.Config{Command: "server", Args: []string{"--verbose"}, Env: []string{"SECRET_TOKEN"}}}, change); err != nil {
		t.Fatalf("Add with --env: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if found := filesHolding(t, home, secret); len(found) > 0 {
		t.Fatalf("the secret reached %v", found)
	}
	if found := filesHolding(t, home, "SECRET_TOKEN"); len(found) == 0 {
		t.Fatal("the accepted connection is not in the store: the file check proves nothing")
	}
}

// TestAddRefusesBlankPerson: a connection change whose person is only
// spaces names no one; it is refused as person_missing and nothing is
// recorded.
func TestAddRefusesBlankPerson(t *testing.T) {
	_, h := newHost(t)
	ctx := context.Background()
	cfg := connector.Config{Command: "server"}
	for _, by := range []string{"", "   "} {
		_, err := connection.Add(ctx, h, connection.AddOptions{Name: "crm", Connector: "crm.test", Config: cfg}, connection.Change{By: by, Now: time.Now()})
		if l := blocking.Refusals(err); len(l) != 1 || l[0].Code != blocking.PersonMissing {
			t.Fatalf("Add by %q = %v; want one %s", by, err, blocking.PersonMissing)
		}
	}
	if list, err := connection.List(ctx, h); err != nil || len(list) != 0 {
		t.Fatalf("refused adds recorded %v, %v", list, err)
	}
}
