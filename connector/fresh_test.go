package connector_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
	"github.com/oa-dev/oa/testkit/connectortest"
)

// TestFresh: Fresh answers the session's last listing while it is within
// the bound and lists again past it; a server whose tools changed is seen
// by the next listing (Inventory always lists).
func TestFresh(t *testing.T) {
	ctx := context.Background()
	tools := baseTools()
	file := filepath.Join(t.TempDir(), "tools.json")
	write := func() {
		if err := os.Rename(connectortest.WriteTools(t, t.TempDir(), tools), file); err != nil {
			t.Fatal(err)
		}
	}
	write()
	s, err := connector.Open(ctx, connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", file, "--reload-tools"}, Confinement: connectortest.Allow(filepath.Dir(t.TempDir()))}, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools[0].Description = "Changed while the session runs."
	write()
	remembered, err := s.Fresh(ctx, time.Hour)
	if err != nil || remembered.Digest != first.Digest {
		t.Fatalf("within the bound: %v, digest %s, want the last listing %s", err, remembered.Digest, first.Digest)
	}
	relisted, err := s.Fresh(ctx, 0)
	if err != nil || relisted.Digest == first.Digest {
		t.Fatalf("past the bound: %v, the change was not seen", err)
	}
	again, err := s.Fresh(ctx, time.Hour)
	if err != nil || again.Digest != relisted.Digest {
		t.Fatalf("after listing again: %v, digest %s, want %s", err, again.Digest, relisted.Digest)
	}
	s.Close()
	if _, err := s.Fresh(ctx, time.Hour); err == nil {
		t.Fatal("Fresh on an ended session answered")
	}
}

// TestAnnouncesToolChanges: a server oa starts is taken at its word when
// it declares tools.listChanged (the test server with --announce-changes,
// the sandbox), not when it does not; a remote server never is, even when
// it declares it (the go-sdk's default).
func TestAnnouncesToolChanges(t *testing.T) {
	ctx := context.Background()
	file := connectortest.WriteTools(t, t.TempDir(), baseTools())
	srv := httptest.NewServer(remoteServer(t, false))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		cfg  connector.Config
		want bool
	}{
		{"silent subprocess", connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", file}, Confinement: connectortest.Allow(filepath.Dir(file))}, false},
		{"announcing subprocess", connector.Config{Command: connectortest.Server(t), Args: []string{"--tools", file, "--announce-changes"}, Confinement: connectortest.Allow(filepath.Dir(file))}, true},
		{"sandbox", connector.Config{Command: connector.SandboxCommand}, true},
		{"remote", remoteConfig(remote.Config{URL: srv.URL + "/mcp"}), false},
	} {
		s, err := connector.Open(ctx, tc.cfg, connector.Options{Timeout: 10 * time.Second, SandboxDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.name == "remote" && !s.Remote() {
			t.Fatal("the remote session is not remote")
		}
		if got := s.AnnouncesToolChanges(); got != tc.want {
			t.Errorf("%s: AnnouncesToolChanges = %v, want %v", tc.name, got, tc.want)
		}
		s.Close()
	}
}
