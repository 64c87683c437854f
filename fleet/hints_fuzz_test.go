package fleet

import (
	"testing"
	"time"
)

// FuzzParseHints: hint annotations come from the registry, unsigned. Any
// bytes either fail to parse or parse to values that render back to
// hints that parse to the same values (or, for a time pushed past year
// 9999 by its zone, fail to parse again: the guess then just misses);
// nothing panics.
func FuzzParseHints(f *testing.F) {
	f.Add("7", "2026-01-02T03:04:05Z", "2026-01-09T03:04:05Z")
	f.Add("-1", "2026-01-02T03:04:05+02:00", "0001-01-01T00:00:00Z")
	f.Add("99999999999999999999", "junk", "")
	f.Fuzz(func(t *testing.T, seq, issued, expires string) {
		h, ok := parseHints(map[string]string{hintSeq: seq, hintIssuedAt: issued, hintExpiresAt: expires})
		if !ok {
			return
		}
		s, i, e := h.seq, h.issued, h.expires
		h2, ok2 := parseHints(timeHints(s, i, e))
		if !ok2 {
			return
		}
		s2, i2, e2 := h2.seq, h2.issued, h2.expires
		if s2 != s || !i2.Equal(i.Truncate(time.Second)) || !e2.Equal(e.Truncate(time.Second)) {
			t.Fatalf("round trip of %q %q %q: %v %v %v %v", seq, issued, expires, ok2, s2, i2, e2)
		}
	})
}
