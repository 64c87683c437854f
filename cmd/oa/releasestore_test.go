package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oa-dev/oa/bind"
	"github.com/oa-dev/oa/testkit/registrytest"
)

// TestBindKeepsTheRelease: oa bind of a release in a registry keeps it
// in the host's release store, so with the registry down oa bind inspect
// (which reads the release as the coordinator does) still finds the live
// plan the bound one.
func TestBindKeepsTheRelease(t *testing.T) {
	reg := registrytest.Start(t)
	p := newPublisher(t)
	pinned := p.publish(reg.Host() + "/oa/clinic-triage")
	p.ok("host", "init", "--publisher-key", p.path("publisher.pub"), "--authority-key", p.path("authority.pub"))
	p.ok("admit", pinned, "--as", "Dr Ada")
	p.ok("registry", "init")
	p.ok("registry", "sign", "--as", "Dr Ada")
	p.ok("connection", "add-stdio", "sandbox", "--connector", "sandbox.records", "--as", "Dr Ada", "--", "builtin:sandbox-records")
	p.ok("connection", "verify", "sandbox", "--as", "Dr Ada")
	p.ok("bind", pinned, "--deployment", "clinic", "--model", "claude-test", "--as", "Dr Ada", "--yes")
	if _, err := os.Stat(filepath.Join(os.Getenv("OA_HOME"), bind.StoreDir, "index.json")); err != nil {
		t.Fatalf("oa bind kept no release: %v", err)
	}
	reg.Down()
	if out := p.ok("bind", "inspect", "clinic", "--no-probe"); !strings.Contains(out, "approved: the live plan is the bound one") {
		t.Fatalf("inspect with the registry down:\n%s", out)
	}
}
