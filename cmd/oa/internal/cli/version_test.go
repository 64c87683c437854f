package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildVersionNamesTheRevision: the version line carries the module
// version and the VCS revision the go tool recorded (on main it printed
// the module version alone).
func TestBuildVersionNamesTheRevision(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/oa-dev/oa", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4653d6a0c0ffee"}, {Key: "vcs.time", Value: "2026-03-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	b := buildVersionOf(info)
	if b.Version != "v0.4.0" || b.Revision != "4653d6a0c0ffee" || b.Time != "2026-03-01T10:00:00Z" || !b.Modified || b.GoVersion != "go1.26.0" {
		t.Fatalf("%+v", b)
	}
	if got, want := b.String("oa.worker/v1"), "oa v0.4.0 (protocol oa.worker/v1, revision 4653d6a0c0ffee of 2026-03-01T10:00:00Z, modified)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	bare := buildVersionOf(&debug.BuildInfo{})
	if got := bare.String("p"); got != "oa (devel) (protocol p, no VCS revision recorded)" || !strings.HasPrefix(buildVersionOf(nil).String("p"), "oa (devel)") {
		t.Fatalf("got %q", got)
	}
}
