package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpGroupsCommandsByWhoUsesThem: oa --help lists the commands under
// publish, host, run, fleet and audit, in that order, and every top-level
// command but the deliberately ungrouped ones (ungroupedCommands) is in
// one of them.
func TestHelpGroupsCommandsByWhoUsesThem(t *testing.T) {
	out, _, code := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	last := -1
	for _, g := range commandGroups() {
		at := strings.Index(out, g.Title)
		if at < 0 {
			t.Fatalf("group %q missing:\n%s", g.Title, out)
		}
		if at < last {
			t.Fatalf("group %q out of order:\n%s", g.Title, out)
		}
		last = at
	}
	if !strings.Contains(out, "go install ./cmd/oa") {
		t.Error("the help does not say how to install oa")
	}
}

// TestEveryCommandHasAGroup: a top-level command added without a group
// would silently move to "Additional Commands"; only ungroupedCommands may
// be there. A command planted without a group is found.
func TestEveryCommandHasAGroup(t *testing.T) {
	root := newRoot(&strings.Builder{}, &strings.Builder{})
	for _, name := range commandsOutOfPlace(root) {
		t.Errorf("command %s is in no group: add it to its package's Group, or to ungroupedCommands; or ungroupedCommands lists a grouped command", name)
	}
	root.AddCommand(&cobra.Command{Use: "planted", Run: func(*cobra.Command, []string) {}})
	if got := commandsOutOfPlace(root); len(got) != 1 || got[0] != "planted" {
		t.Errorf("with a command planted in no group, out of place: %q, want [planted]", got)
	}
}

// commandsOutOfPlace names root's top-level commands (with cobra's help
// and completion) that are in no group and not deliberately ungrouped,
// or deliberately ungrouped but in a group.
func commandsOutOfPlace(root *cobra.Command) []string {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var names []string
	for _, c := range root.Commands() {
		if ungroupedCommands[c.Name()] != (c.GroupID == "") {
			names = append(names, c.Name())
		}
	}
	return names
}
