package main

import (
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

// TestArgumentMistakesNameTheArgument: through the CLI, a missing argument
// is named as the Use line writes it, with the usage and --help, exit 2;
// too many are counted, never repeated.
func TestArgumentMistakesNameTheArgument(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"inspect"}, []string{"missing FILE", "oa inspect FILE", "oa inspect --help"}},
		{[]string{"copy", "src"}, []string{"missing DST", "oa copy --help"}},
		{[]string{"connection", "add"}, []string{"missing NAME", "oa connection add --help"}},
		{[]string{"connection", "add-stdio"}, []string{"missing NAME", "oa connection add-stdio --help"}},
		{[]string{"connection", "add-remote"}, []string{"missing NAME", "oa connection add-remote --help"}},
		{[]string{"sign", "--key", "k"}, []string{"missing REF@sha256:…"}},
		{[]string{"host", "init", "plantedArgument"}, []string{"no arguments expected, got 1", "oa host init --help"}},
		{[]string{"inspect", "a", "plantedArgument"}, []string{"at most 1 argument(s) expected, got 2", "oa inspect --help"}},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != 2 {
			t.Errorf("oa %s: exit %d, want 2", strings.Join(tc.args, " "), code)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("oa %s: %q does not say %q", strings.Join(tc.args, " "), errOut, w)
			}
		}
		if strings.Contains(out+errOut, "plantedArgument") {
			t.Errorf("oa %s: %q repeats an argument", strings.Join(tc.args, " "), out+errOut)
		}
		if strings.Contains(errOut, "arg(s), received") {
			t.Errorf("oa %s: %q is cobra's own message", strings.Join(tc.args, " "), errOut)
		}
	}
}

// TestEveryCommandUsesWantArgs: every runnable command answers too many
// (or, with a required argument, too few) arguments with wantArgs's
// message, so none is left on cobra's own checks.
func TestEveryCommandUsesWantArgs(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c == root || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Args == nil {
			t.Errorf("%s has no Args check", c.CommandPath())
			return
		}
		checked++
		many := make([]string, 64)
		errMany, errNone := c.Args(c, many), c.Args(c, nil)
		for _, err := range []error{errMany, errNone} {
			if err != nil && !strings.Contains(err.Error(), c.CommandPath()+" --help") {
				t.Errorf("%s: %v is not wantArgs's message", c.CommandPath(), err)
			}
		}
		if errMany == nil && !strings.HasSuffix(c.Use, "ARGS…") {
			t.Errorf("%s accepts 64 arguments", c.CommandPath())
		}
	}
	walk(root)
	if checked < 40 {
		t.Fatalf("checked %d commands, want every one", checked)
	}
}

func TestInspectMissingFileNamesThePath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope", "worker.ir.json")
	_, errOut, code := runCLI(t, "inspect", missing)
	wantExit(t, "inspect of a missing file", code, 2, "", errOut)
	wantHas(t, "inspect of a missing file", errOut, missing+": ", "ir_unreadable", "no file at this path")
}

// TestInspectRefusesPipesAndDevices: oa inspect of a named pipe or of
// /dev/zero returns (exit 2, the path named) instead of waiting or
// reading without end.
func TestInspectRefusesPipesAndDevices(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "ir.json")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pipe, "/dev/zero"} {
		_, errOut, code := runCLI(t, "inspect", p)
		if code != 2 {
			t.Errorf("inspect %s: exit code %d, want 2\n%s", p, code, errOut)
		}
		for _, want := range []string{p + ": ", "not a regular file"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("inspect %s: want %q in:\n%s", p, want, errOut)
			}
		}
	}
}

// TestCobraMistakesAreUsageErrors: every mistake cobra finds in the
// command line itself is a usage error (exit 2, its own message), typed
// where it is found rather than recognized by its text: an unknown command
// or flag, a missing required flag, and each kind of flag group (one of a
// group required, which exited 1 while the message prefixes were listed;
// mutually exclusive; required together).
func TestCobraMistakesAreUsageErrors(t *testing.T) {
	t.Setenv("OA_HOME", t.TempDir())
	ref := "localhost:5000/clinic@sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "oa"`},
		{[]string{"compile", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"attention", "approve", "x"}, "name the person deciding: --person NAME"},
		{[]string{"attest", ref}, "at least one of the flags in the group [key predicate-out] is required"},
		{[]string{"attest", "--key", "k", "--predicate-out", "p", "--authority", "a", ref}, "none of the others can be"},
		{[]string{"attest", "--predicate-out", "p", ref}, "are set they must all be set"},
		// A bound of zero or less is a mistake, never "no bound" or "refuse everything".
		{[]string{"compile", "--max-ir-bytes", "0", "../../examples/clinic-triage"}, "--max-ir-bytes must be a positive number of bytes, got 0"},
		{[]string{"push", "--compile-timeout", "-1s", "../../examples/clinic-triage", ref}, "--compile-timeout must be a positive duration"},
		{[]string{"compile", "--max-memory-bytes", "-5", "../../examples/clinic-triage"}, "--max-memory-bytes must be a positive number of bytes"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("oa %v: exit code %d, want 2\n%s", c.args, code, errOut)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("oa %v: want %q in:\n%s", c.args, c.want, errOut)
		}
	}
}
