package connector_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/internal/testkit/connectortest"
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
