package connection_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/oa-dev/oa/connection"
)

// TestCommandLine: the command and every argument on one line, quoted
// only where needed, and read back by bash as the same words.
func TestCommandLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"/srv/mcp/server.js"}, "node /srv/mcp/server.js"},
		{[]string{"/srv/my tools/server.js", "--name=it's"}, `node '/srv/my tools/server.js' '--name=it'\''s'`},
		{[]string{"", "$HOME", "a;b"}, `node '' '$HOME' 'a;b'`},
		{[]string{"line\none", "tab\there", "bell\a", "bad\xffbyte", `back\slash'`}, `node $'line\none' $'tab\there' $'bell\x07' $'bad\xffbyte' 'back\slash'\'''`},
		{[]string{"zero\u200bwidth", "café"}, `node $'zero\u200bwidth' 'café'`},
	}
	for _, c := range cases {
		got := connection.CommandLine("node", c.args)
		if got != c.want {
			t.Errorf("CommandLine(node, %q) = %s, want %s", c.args, got, c.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%q is on more than one line", got)
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			continue
		}
		out, err := exec.Command(bash, "-c", `printf '%s\0' `+strings.TrimPrefix(got, "node ")).Output()
		if err != nil {
			t.Fatal(err)
		}
		words := strings.Split(string(out), "\x00")
		if words = words[:len(words)-1]; !slices.Equal(words, c.args) {
			t.Errorf("bash reads %s as %q, want %q", got, words, c.args)
		}
	}
}
