package connection_test

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/connection"
	"github.com/oa-dev/oa/connector"
	"github.com/oa-dev/oa/connector/remote"
)

// TestViewOfRemoteNamesNoProfile (issue 39): a remote connection's view
// (oa connection show) describes no confinement profile — none of it
// applies to a server on another machine — where a local one's does.
func TestViewOfRemoteNamesNoProfile(t *testing.T) {
	remote := connection.ViewOf("ward-desk", &connection.Record{Name: "ward-desk", Config: connector.Config{Remote: &remote.Config{URL: "https://ward.example.com/mcp"}}})
	if strings.Contains(remote.Confinement, "default") || strings.Contains(remote.Confinement, "network") || !strings.Contains(remote.Confinement, "remote") {
		t.Fatalf("a remote connection's confinement reads %q", remote.Confinement)
	}
	local := connection.ViewOf("notes", &connection.Record{Name: "notes", Config: connector.Config{Command: "/usr/bin/notes-server"}})
	if !strings.HasPrefix(local.Confinement, "default") {
		t.Fatalf("a local connection's confinement reads %q", local.Confinement)
	}
}
