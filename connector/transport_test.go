package connector_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestKind: a Config names its transport in one place — a URL is remote
// whatever else it holds, SandboxCommand is the built-in sandbox, and any
// other command (or none) is a process to start.
func TestKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  connector.Config
		want connector.Kind
	}{
		{"process", connector.Config{Command: "server"}, connector.KindProcess},
		{"no command", connector.Config{}, connector.KindProcess},
		{"sandbox", connector.Config{Command: connector.SandboxCommand}, connector.KindSandbox},
		{"remote", connector.Config{Remote: &remote.Config{URL: "https://example.test/mcp"}}, connector.KindRemote},
		{"remote with a command", connector.Config{Command: connector.SandboxCommand, Remote: &remote.Config{URL: "https://example.test/mcp"}}, connector.KindRemote},
	} {
		if got := tc.cfg.Kind(); got != tc.want {
			t.Errorf("%s: Kind() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSessionTransport: Open gives each kind of connection a session over
// its own transport — Sandbox and Remote say which, and Describe names how
// a remote server was reached and nothing for the others.
func TestSessionTransport(t *testing.T) {
	ctx := context.Background()
	file := connectortest.WriteTools(t, t.TempDir(), baseTools())
	srv := httptest.NewServer(remoteServer(t, false))
	defer srv.Close()
	for _, tc := range []struct {
		name            string
		cfg             connector.Config
		sandbox, remote bool
		reachedBy       string
	}{
		{"process", connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", file}, Confinement: connectortest.Allow(filepath.Dir(file))}, false, false, ""},
		{"sandbox", connector.Config{Command: connector.SandboxCommand}, true, false, ""},
		{"remote", remoteConfig(remote.Config{URL: srv.URL + "/mcp"}), false, true, remote.TransportStreamable},
	} {
		opts := connector.Options{Timeout: 10 * time.Second, SandboxDir: t.TempDir()}
		s, err := connector.Open(ctx, tc.cfg, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.Sandbox() != tc.sandbox || s.Remote() != tc.remote {
			t.Errorf("%s: Sandbox() = %v, Remote() = %v", tc.name, s.Sandbox(), s.Remote())
		}
		if err := s.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.name, err)
		}
		d, err := connector.Describe(ctx, tc.cfg, opts)
		if err != nil {
			t.Fatalf("%s: Describe: %v", tc.name, err)
		}
		if d.Transport != tc.reachedBy || (d.Protocol != "") != tc.remote {
			t.Errorf("%s: Describe: transport %q, protocol %q", tc.name, d.Transport, d.Protocol)
		}
	}
}
