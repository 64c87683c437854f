// Package escape makes text that came from elsewhere (a package, a run's
// inputs, a downstream server) safe to show a person on a terminal or a
// page: nothing in it can move the cursor, retitle a terminal, or hide or
// reorder text.
package escape

import (
	"fmt"
	"strings"
	"unicode"
)

// Controls escapes every control character of s but the line break, the
// line and paragraph separators and the bidirectional controls as
// \uXXXX, which reads the same inside a JSON string; bytes that are not
// UTF-8 become U+FFFD.
func Controls(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if r != '\n' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OneLine is s on one line (every run of white space one space), its
// control characters escaped (Controls).
func OneLine(s string) string {
	return Controls(strings.Join(strings.Fields(s), " "))
}
