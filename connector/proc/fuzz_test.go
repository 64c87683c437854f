package proc

import (
	"regexp"
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// secretRefusal is every Detail parseSecrets may produce: a line number and
// a fixed rule, nothing from the input.
var secretRefusal = regexp.MustCompile(`^secret file line [0-9]+: (not NAME=VALUE|the name is not a variable name|the value holds a NUL byte|the value holds a carriage return|the name is given twice)$`)

func FuzzParseSecrets(f *testing.F) {
	for _, s := range []string{"", "A=1\n", "A=1\r\nB=x=y\n# c\n\n", "=x", "A", "A=\x00", "A=1\nA=2", "1A=2", " A=1", "\xff=1", "A=\xff\xfe"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseSecrets(data)
		if err != nil {
			rs := blocking.Refusals(err)
			if len(rs) != 1 || rs[0].Code != blocking.ConnectorSecretUnavailable || !secretRefusal.MatchString(rs[0].Detail) {
				t.Fatalf("unexpected refusal: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		var lines []string
		for _, e := range entries {
			if !validEnvName(e.name) || seen[e.name] || strings.ContainsAny(e.value, "\x00\r\n") {
				t.Fatalf("bad entry accepted: %q", e.name)
			}
			seen[e.name] = true
			lines = append(lines, e.name+"="+e.value)
		}
		// What was accepted reads back the same once written out again.
		again, err := parseSecrets([]byte(strings.Join(lines, "\n")))
		if err != nil || len(again) != len(entries) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range again {
			if again[i] != entries[i] {
				t.Fatalf("round trip changed entry %d", i)
			}
		}
	})
}
