package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestMistypedSubcommandIsAUsageError walks the whole command tree: under
// every group (a command with subcommands that runs nothing itself) an
// unknown word is a usage error, exit 2, naming the group and printing no
// help on stdout, and a subcommand's name with one letter dropped is
// answered with cobra's "Did you mean this?" naming it. On main a group
// below the root printed its help and exited 0 (`oa attention aprove ID`
// approved nothing, silently).
func TestMistypedSubcommandIsAUsageError(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	groups := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Runnable() || !c.HasSubCommands() {
			return
		}
		groups++
		path := strings.Fields(c.CommandPath())[1:]
		out, errOut, code := runCLI(t, append(path, "zzqxplanted")...)
		if code != 2 {
			t.Errorf("%s zzqxplanted: exit code %d, want 2 (a usage error): %s", c.CommandPath(), code, errOut)
		}
		if out != "" {
			t.Errorf("%s zzqxplanted: stdout %q, want none", c.CommandPath(), out)
		}
		if want := `unknown command "zzqxplanted" for "` + c.CommandPath() + `"`; !strings.Contains(errOut, want) {
			t.Errorf("%s zzqxplanted: want %q in stderr %q", c.CommandPath(), want, errOut)
		}
		for _, sub := range c.Commands() {
			name := sub.Name()
			if len(name) < 4 || sub.Hidden || name == "help" || name == "completion" {
				continue
			}
			typo := name[:1] + name[2:]
			out, errOut, code := runCLI(t, append(path, typo, "--as", "x")...)
			if code != 2 {
				t.Errorf("%s %s: exit code %d, want 2: %s", c.CommandPath(), typo, code, errOut)
			}
			if out != "" {
				t.Errorf("%s %s: stdout %q, want none", c.CommandPath(), typo, out)
			}
			for _, want := range []string{"Did you mean this?", "\t" + name + "\n"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("%s %s: want %q in stderr %q (suggesting %s)", c.CommandPath(), typo, want, errOut, name)
				}
			}
		}
	}
	walk(root)
	if groups < 10 {
		t.Fatalf("found %d groups, want every one of them", groups)
	}
}
