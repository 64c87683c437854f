package connector_test

import (
	"testing"

	"github.com/oa-dev/oa/connector"
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
		{"remote", connector.Config{Remote: &connector.Remote{URL: "https://example.test/mcp"}}, connector.KindRemote},
		{"remote with a command", connector.Config{Command: connector.SandboxCommand, Remote: &connector.Remote{URL: "https://example.test/mcp"}}, connector.KindRemote},
	} {
		if got := tc.cfg.Kind(); got != tc.want {
			t.Errorf("%s: Kind() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
