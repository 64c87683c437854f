package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oa-dev/oa/coordinator/attention"
)

// TestFormCallEscapesAndBounds: the call shown in an approval form has
// every control and bidirectional formatting character escaped (an
// argument cannot reshape the form), and over maxFormCall bytes it is cut
// on a rune boundary, saying so.
func TestFormCallEscapesAndBounds(t *testing.T) {
	p := &attention.ProposedChange{Call: attention.ProposedCall{Connection: "sandbox", Tool: "append_note",
		Arguments: json.RawMessage(`{"record":"AB-1234","text":"fine\u2028line \u202eevil\u202c ` + "\u0085" + `bell"}`)}}
	got := formCall(p)
	for _, bad := range []string{"\u2028", "\u202e", "\u202c", "\u0085"} {
		if strings.Contains(got, bad) {
			t.Errorf("the form carries %q unescaped:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, `\u202e`) || !strings.Contains(got, `"record": "AB-1234"`) || !strings.Contains(got, "connection sandbox, tool append_note") {
		t.Fatalf("form call:\n%s", got)
	}
	long := strings.Repeat("é", maxFormCall)
	p.Call.Arguments = json.RawMessage(`{"text":"` + long + `"}`)
	got = formCall(p)
	if len(got) > maxFormCall+512 || !strings.Contains(got, "is left out here") || !strings.HasSuffix(strings.Split(got, "\n(…")[0], "é") {
		t.Fatalf("a long call is not bounded: %d bytes", len(got))
	}
	if formCall(nil) != "" {
		t.Fatal("an item without a proposed change shows a call")
	}
}
