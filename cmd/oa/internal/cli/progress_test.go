package cli

import (
	"bytes"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// TestProgressOnlyOnATerminalWithoutJSON: a step reaches stderr when it
// is a terminal, and never with --json (on main, --json output on a
// terminal was interleaved with progress lines) or off a terminal.
func TestProgressOnlyOnATerminalWithoutJSON(t *testing.T) {
	for _, c := range []struct {
		terminal, json bool
		want           string
	}{
		{true, false, "step 1\n"},
		{true, true, ""},
		{false, false, ""},
	} {
		old := isTerminal
		isTerminal = func(io.Writer) bool { return c.terminal }
		var stderr bytes.Buffer
		cmd := &cobra.Command{Use: "x"}
		cmd.Flags().Bool("json", false, "")
		if c.json {
			_ = cmd.Flags().Set("json", "true")
		}
		cmd.SetErr(&stderr)
		NewProgress(cmd).Step("step %d", 1)
		isTerminal = old
		if stderr.String() != c.want {
			t.Errorf("terminal %v, json %v: %q, want %q", c.terminal, c.json, stderr.String(), c.want)
		}
	}
}
