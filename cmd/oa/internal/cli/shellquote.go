package cli

import "strings"

// ShellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters.
func ShellQuote(s string) string {
	plain := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,@%=", r)) {
			plain = false
			break
		}
	}
	if plain && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
