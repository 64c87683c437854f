package connection

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CommandLine is command and args as one line a POSIX shell reads back
// as the same words, for a person to read: a plain word as it is, one
// with spaces or shell characters in single quotes, and one holding a
// control or otherwise unprintable character in bash's $'…' with each
// such character escaped (\n, \t, \xHH, \u…), so the line stays one line
// and shows every byte.
func CommandLine(command string, args []string) string {
	words := append([]string{command}, args...)
	out := make([]string, len(words))
	for i, w := range words {
		switch {
		case w != "" && plainWord.MatchString(w):
			out[i] = w
		case strings.IndexFunc(w, unprintable) >= 0:
			out[i] = ansiQuote(w)
		default:
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// unprintable reports whether r would not show as itself on a line.
func unprintable(r rune) bool {
	return r == unicode.ReplacementChar || !unicode.IsPrint(r) && r != ' '
}

// ansiQuote quotes w as bash's $'…', escaping backslashes, single quotes
// and every unprintable character; invalid UTF-8 bytes are shown as \xHH.
func ansiQuote(w string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(w); {
		r, size := rune(w[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(w[i:])
		}
		switch {
		case r == unicode.ReplacementChar && size == 1:
			fmt.Fprintf(&b, `\x%02x`, w[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unprintable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unprintable(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}
