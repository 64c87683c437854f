package compiler

import (
	"strings"
	"testing"

	"github.com/oa-dev/oa/blocking"
)

// TestRefusalsLocateKeysWithoutEchoingThem (issue 22, D15): a schema
// error about a key that is customer state printed
// capabilities."bob@example.com". The refusal names the file position and
// the path with the key replaced, never the key.
func TestRefusalsLocateKeysWithoutEchoingThem(t *testing.T) {
	for _, key := range []string{"bob@example.com", "sk_live_0123456789abcdefABCDEF", "bob＠example．com"} {
		dir := editedExample(t, replaceOnce("capabilities.cue", `"records.read": {`, `"records.read": {
	}
	"`+key+`": {
		description: "Read one clinic record with its status and notes."
		risk:        "read_only"
	}
	"records.read.copy": {`))
		_, err := Compile(dir)
		refusals := blocking.Refusals(err)
		if len(refusals) == 0 {
			t.Fatalf("%s: compiled: %v", key, err)
		}
		for _, r := range refusals {
			all := r.Pos + " " + r.Path + " " + r.Detail
			if strings.Contains(all, key) || strings.Contains(all, "bob") || strings.Contains(all, "sk_live") {
				t.Fatalf("%s: the refusal echoes the key: %+v", key, r)
			}
		}
		found := false
		for _, r := range refusals {
			found = found || r.Path == "capabilities.<label>" && strings.Contains(r.Pos, "capabilities.cue:")
		}
		if !found {
			t.Fatalf("%s: no refusal locates the key: %v", key, err)
		}
	}
}
