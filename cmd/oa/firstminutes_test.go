package main

import (
	"strings"
	"testing"
)

// TestHelpGroupsCommandsByWhoUsesThem: oa --help lists the commands under
// publish, host, run, fleet and audit, in that order, and every top-level
// command but explain and version is in one of them.
func TestHelpGroupsCommandsByWhoUsesThem(t *testing.T) {
	out, _, code := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	last := -1
	for _, g := range commandGroups {
		at := strings.Index(out, g.title)
		if at < 0 || at < last {
			t.Fatalf("group %q missing or out of order:\n%s", g.title, out)
		}
		last = at
	}
	root := newRoot(&strings.Builder{}, &strings.Builder{})
	for _, c := range root.Commands() {
		switch c.Name() {
		case "explain", "version", "help", "completion":
			continue
		}
		if c.GroupID == "" {
			t.Errorf("command %s is in no group", c.Name())
		}
	}
	if !strings.Contains(out, "go install ./cmd/oa") {
		t.Error("the help does not say how to install oa")
	}
}
