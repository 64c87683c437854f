package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestFormatJSONIn(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"receipts", "--format=json"}, true},
		{[]string{"--format", "json", "receipts"}, true},
		{[]string{"--format", "text"}, false},
		{[]string{"--format"}, false},
		{[]string{"connection", "add-stdio", "x", "--", "server", "--format=json"}, false},
		{nil, false},
	} {
		if got := FormatJSONIn(c.args); got != c.want {
			t.Errorf("FormatJSONIn(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestExitStatusOfAUsageErrorIsTwo(t *testing.T) {
	if got := ExitStatus(Usage(errors.New("bad"))); got != 2 {
		t.Errorf("a usage error: exit %d, want 2", got)
	}
	if got := ExitStatus(errors.New("fault")); got != 1 {
		t.Errorf("a fault: exit %d, want 1", got)
	}
	if inner := errors.New("bad"); !errors.Is(Usage(inner), inner) {
		t.Error("a usage error does not unwrap to its mistake")
	}
}

// formatRoot is a root with the output flags and one command, its flags
// parsed from args.
func formatRoot(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	root := &cobra.Command{Use: "oa"}
	AddOutputFlags(root)
	sub := &cobra.Command{Use: "sub", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(sub)
	if err := sub.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return sub
}

func TestCheckFormat(t *testing.T) {
	if err := CheckFormat(formatRoot(t, "--format", "json")); err != nil {
		t.Errorf("--format json: %v", err)
	}
	if err := CheckFormat(formatRoot(t)); err != nil {
		t.Errorf("no --format: %v", err)
	}
	err := CheckFormat(formatRoot(t, "--format", "yaml"))
	if ExitStatus(err) != 2 {
		t.Errorf("--format yaml: %v, want a usage error", err)
	}
	if err == nil || !strings.Contains(err.Error(), `--format "yaml" is not an output format`) {
		t.Errorf("--format yaml: %v", err)
	}
	if err := CheckFormat(formatRoot(t, "--format", "text", "--json")); err == nil || !strings.Contains(err.Error(), "ask for two formats") {
		t.Errorf("--format text --json: %v", err)
	}
	if !WantJSON(formatRoot(t, "--format", "json")) {
		t.Error("--format json does not want JSON")
	}
	if !WantJSON(formatRoot(t, "--json")) {
		t.Error("--json does not want JSON")
	}
	if WantJSON(formatRoot(t)) {
		t.Error("no flag wants JSON")
	}
}

func TestWantArgsNamesTheMissingArgument(t *testing.T) {
	cmd := &cobra.Command{Use: "copy SRC DST"}
	check := WantArgs(2, 2)
	err := check(cmd, []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "missing DST") {
		t.Errorf("one of two: %v, want missing DST", err)
	}
	if err == nil || !strings.Contains(err.Error(), "copy --help") {
		t.Errorf("one of two: %v, want a pointer at --help", err)
	}
	if err := check(cmd, []string{"a", "b", "c"}); err == nil || !strings.Contains(err.Error(), "at most 2 argument(s) expected, got 3") {
		t.Errorf("three of two: %v", err)
	}
	if err := WantArgs(0, 0)(&cobra.Command{Use: "list"}, []string{"x"}); err == nil || !strings.Contains(err.Error(), "no arguments expected, got 1") {
		t.Errorf("list x: %v", err)
	}
	if err := WantArgs(1, -1)(cmd, make([]string, 64)); err != nil {
		t.Errorf("no upper bound: %v", err)
	}
}

func TestCommandGroupNamesItsCommands(t *testing.T) {
	root := &cobra.Command{Use: "oa"}
	a, b := &cobra.Command{Use: "a"}, &cobra.Command{Use: "b"}
	CommandGroup{ID: "g", Title: "G:", Commands: []*cobra.Command{a, b}}.AddTo(root)
	if !root.ContainsGroup("g") {
		t.Error("the group's heading was not added")
	}
	for _, c := range []*cobra.Command{a, b} {
		if c.GroupID != "g" || c.Parent() != root {
			t.Errorf("command %s: group %q, parent %v", c.Name(), c.GroupID, c.Parent())
		}
	}
}
