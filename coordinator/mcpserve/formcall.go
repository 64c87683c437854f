package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oa-dev/oa/coordinator/attention"
)

// The approval form shows what the person approves: the connection, the
// tool and the arguments exactly as the step would send them, from the
// item's sealed proposed change (Coordinator.ProposedChange). The person
// at the client is inside the boundary; the agent is not, so this text
// goes only into the elicitation request — never into a tool result, a
// log line, the operator's channel or telemetry. It is bounded
// (maxFormCall; over it the form says the rest is left out and names oa
// attention show) and every control character in it is escaped, so an
// argument cannot reshape the form the person reads.

// maxFormCall bounds the arguments shown in a form, in bytes.
const maxFormCall = 4096

// formCall is the text appended to an approval form's fixed copy: the
// call the step would send, or nothing for an item without a proposed
// change.
func formCall(p *attention.ProposedChange) string {
	if p == nil {
		return ""
	}
	var b bytes.Buffer
	args := p.Call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	if json.Indent(&b, args, "", "  ") != nil {
		b.Reset()
		b.Write(args)
	}
	shown, cut := escapeControls(b.String()), false
	if len(shown) > maxFormCall {
		shown, cut = truncateUTF8(shown, maxFormCall), true
	}
	out := fmt.Sprintf("\n\nThe step would send to connection %s, tool %s, these arguments, exactly as they will be sent:\n%s", escapeControls(p.Call.Connection), escapeControls(p.Call.Tool), shown)
	if cut {
		out += fmt.Sprintf("\n(… the rest, over %d bytes, is left out here: the host's operator sees it whole with oa attention show.)", maxFormCall)
	}
	return out
}

// escapeControls escapes every control, line- or paragraph-separator and
// bidirectional formatting character of s but the line break, as \uXXXX.
func escapeControls(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r != '\n' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncateUTF8 is s cut to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
