package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/oa-dev/oa/cmd/oa/internal/cli"
)

// commandPaths lists the path of every runnable command under root.
func commandPaths(root *cobra.Command) [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && len(path) > 0 {
			out = append(out, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	return out
}

// TestFormatJSONBesideJSON walks every command that takes --json: each
// takes --format json as the same request (cli.WantJSON), prints text
// without either, and refuses --format yaml and --json --format text as
// usage errors (exit 2). oa runs keeps its own --format (table, json or
// csv), whose json is JSON too.
func TestFormatJSONBesideJSON(t *testing.T) {
	paths := commandPaths(newRoot(io.Discard, io.Discard))
	if len(paths) < 50 {
		t.Fatalf("walked only %d commands", len(paths))
	}
	parse := func(path []string, args ...string) (*cobra.Command, error) {
		t.Helper()
		c, _, err := newRoot(io.Discard, io.Discard).Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ParseFlags(args); err != nil {
			t.Fatalf("oa %v %v: %v", path, args, err)
		}
		return c, cli.CheckFormat(c)
	}
	walked := 0
	for _, path := range paths {
		c, err := parse(path, "--json")
		if c.Flags().Lookup("json") == nil {
			continue
		}
		walked++
		name := strings.Join(path, " ")
		if err != nil {
			t.Errorf("oa %s --json: %v", name, err)
		}
		if !cli.WantJSON(c) {
			t.Errorf("oa %s --json does not ask for JSON", name)
		}
		c, err = parse(path, "--format", "json")
		if err != nil {
			t.Errorf("oa %s --format json: %v", name, err)
		}
		if !cli.WantJSON(c) {
			t.Errorf("oa %s --format json does not ask for JSON", name)
		}
		c, err = parse(path)
		if err != nil {
			t.Errorf("oa %s: %v", name, err)
		}
		if cli.WantJSON(c) {
			t.Errorf("oa %s asks for JSON with no flag", name)
		}
		if name == "runs" {
			if !strings.Contains(c.Flags().Lookup("format").Usage, "json") {
				t.Errorf("oa runs --format takes no json")
			}
			continue
		}
		for _, bad := range [][]string{{"--format", "yaml"}, {"--json", "--format", "text"}} {
			if _, err := parse(path, bad...); cli.ExitStatus(err) != 2 {
				t.Errorf("oa %s %v: %v, want a usage error", name, bad, err)
			}
		}
	}
	if walked != len(paths) {
		t.Errorf("%d of %d commands take --json", walked, len(paths))
	}

	// End to end: the same output, and refusals printed as JSON.
	for _, args := range [][]string{{"explain", "harness_not_installed"}, {"version"}} {
		withJSON, _, code1 := runCLI(t, append(args, "--json")...)
		withFormat, _, code2 := runCLI(t, append(args, "--format", "json")...)
		if code1 != 0 {
			t.Errorf("oa %v --json: exit code %d, want 0", args, code1)
		}
		if code2 != 0 {
			t.Errorf("oa %v --format json: exit code %d, want 0", args, code2)
		}
		if withJSON != withFormat {
			t.Errorf("oa %v --format json printed %q, --json %q: want the same", args, withFormat, withJSON)
		}
		if !json.Valid([]byte(withFormat)) {
			t.Errorf("oa %v --format json printed invalid JSON %q", args, withFormat)
		}
	}
	for _, args := range [][]string{{"harness", "transcript", "--format", "json"}, {"nosuchcommand", "--format", "json"}, {"receipts", "lst", "--format=json"}} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("oa %v: exit code %d, want 2", args, code)
		}
		if !json.Valid([]byte(errOut)) {
			t.Errorf("oa %v: the refusal is not JSON:\n%s", args, errOut)
		}
	}
	_, errOut, code := runCLI(t, "version", "--format", "yaml")
	if code != 2 {
		t.Errorf("oa version --format yaml: exit code %d, want 2", code)
	}
	if want := `--format "yaml" is not an output format: give text or json`; !strings.Contains(errOut, want) {
		t.Errorf("oa version --format yaml: want %q in:\n%s", want, errOut)
	}
}
