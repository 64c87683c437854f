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
		if err != nil || !cli.WantJSON(c) {
			t.Errorf("oa %s --json: %v, JSON %v", name, err, cli.WantJSON(c))
		}
		if c, err = parse(path, "--format", "json"); err != nil || !cli.WantJSON(c) {
			t.Errorf("oa %s --format json: %v, JSON %v", name, err, cli.WantJSON(c))
		}
		if c, err = parse(path); err != nil || cli.WantJSON(c) {
			t.Errorf("oa %s: %v, JSON %v", name, err, cli.WantJSON(c))
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
		if code1 != 0 || code2 != 0 || withJSON != withFormat || !json.Valid([]byte(withFormat)) {
			t.Errorf("oa %v --format json printed %q (%d), --json %q (%d)", args, withFormat, code2, withJSON, code1)
		}
	}
	for _, args := range [][]string{{"harness", "transcript", "--format", "json"}, {"nosuchcommand", "--format", "json"}, {"receipts", "lst", "--format=json"}} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !json.Valid([]byte(errOut)) {
			t.Errorf("oa %v: %d, the refusal is not JSON:\n%s", args, code, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "version", "--format", "yaml"); code != 2 || !strings.Contains(errOut, `--format "yaml" is not an output format: give text or json`) {
		t.Errorf("oa version --format yaml: %d %s", code, errOut)
	}
}
