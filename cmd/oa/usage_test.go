package main

import (
	"encoding/json"
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
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown command "zzqxplanted" for "`+c.CommandPath()+`"`) {
			t.Errorf("%s zzqxplanted: exit %d, stdout %q, stderr %q; want a usage error, exit 2", c.CommandPath(), code, out, errOut)
		}
		for _, sub := range c.Commands() {
			name := sub.Name()
			if len(name) < 4 || sub.Hidden || name == "help" || name == "completion" {
				continue
			}
			typo := name[:1] + name[2:]
			out, errOut, code := runCLI(t, append(path, typo, "--as", "x")...)
			if code != 2 || out != "" || !strings.Contains(errOut, "Did you mean this?") || !strings.Contains(errOut, "\t"+name+"\n") {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 2 suggesting %s", c.CommandPath(), typo, code, out, errOut, name)
			}
		}
	}
	walk(root)
	if groups < 10 {
		t.Fatalf("found %d groups, want every one of them", groups)
	}
	for _, args := range [][]string{{"attention", "aprove", "ID", "--as", "X"}, {"receipts", "lst"}, {"connection", "ad"}, {"keys", "genrate"}} {
		if _, errOut, code := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "Did you mean this?") {
			t.Errorf("oa %s: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}
	// A group alone, or with help, still prints its help.
	for _, args := range [][]string{{"receipts"}, {"receipts", "help"}, {"receipts", "--help"}} {
		if out, errOut, code := runCLI(t, args...); code != 0 || !strings.Contains(out, "Available Commands:") {
			t.Errorf("oa %s: exit %d, %q %q", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestVersionFlag: oa --version prints what oa version prints, exit 0
// (on main it was an unknown flag, exit 2); --json names the revision.
func TestVersionFlag(t *testing.T) {
	flag, errOut, code := runCLI(t, "--version")
	cmd, _, _ := runCLI(t, "version")
	if code != 0 || flag != cmd || !strings.HasPrefix(flag, "oa ") || !strings.Contains(flag, "protocol ") {
		t.Fatalf("oa --version: exit %d %q %q; oa version %q", code, flag, errOut, cmd)
	}
	out, _, code := runCLI(t, "version", "--json")
	var v struct{ Version, Protocol string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.Protocol == "" {
		t.Fatalf("oa version --json: %d %s", code, out)
	}
	if _, _, code := runCLI(t, "-v"); code != 2 {
		t.Fatalf("oa -v: exit %d, want a usage error (no shorthand for --version)", code)
	}
}

// TestUsageErrorsSayTheyAre: a bad command line's stderr starts "oa:
// usage error: " (with --json, kind "usage"), whether cobra found it or
// oa did before cobra parsed a flag.
func TestUsageErrorsSayTheyAre(t *testing.T) {
	for _, args := range [][]string{{"compile", "--nope", "x"}, {"receipts", "lst"}, {"inspect"}} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !strings.HasPrefix(errOut, "oa: usage error: ") {
			t.Errorf("oa %s: exit %d %q", strings.Join(args, " "), code, errOut)
		}
		_, errOut, code = runCLI(t, append([]string{"--json"}, args...)...)
		var j struct{ Kind string }
		if code != 2 || json.Unmarshal([]byte(errOut), &j) != nil || j.Kind != "usage" {
			t.Errorf("oa --json %s: exit %d %q", strings.Join(args, " "), code, errOut)
		}
	}
}
