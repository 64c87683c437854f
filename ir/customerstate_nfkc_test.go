package ir

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/oa-dev/oa/blocking"
)

// TestScanTextSeesThroughCompatibilityForms (issue 22, D15): a social
// security number and an email written with full-width characters were
// not customer state to the scanner. Each is found, at the offset where it
// begins as written, and the finding never echoes it.
func TestScanTextSeesThroughCompatibilityForms(t *testing.T) {
	cases := []struct {
		text   string
		prose  bool
		code   blocking.Code
		offset int
	}{
		{"patient 078-05-1120 called", false, blocking.CustomerStateNationalID, 8},
		{"ssn 078 05 1120", true, blocking.CustomerStateNationalID, 4},
		{"write to alice＠example．com today", false, blocking.CustomerStateEmail, 9},
		{"ａｌｉｃｅ@example.com", false, blocking.CustomerStateEmail, 0},
		{"ssn ０７８-０５-１１２０", false, blocking.CustomerStateNationalID, 4},
		{"key ｇｈｐ_" + strings.Repeat("ａB3", 12), false, blocking.CustomerStateToken, 4},
	}
	for _, c := range cases {
		got := ScanText(c.text, c.prose)
		if len(got) != 1 || got[0].Code != c.code || got[0].Offset != c.offset {
			t.Errorf("ScanText(%q) = %+v, want one %s at byte %d", c.text, got, c.code, c.offset)
			continue
		}
		if strings.Contains(got[0].Rule, "078") || strings.Contains(got[0].Rule, "alice") {
			t.Errorf("finding echoes the text: %+v", got[0])
		}
	}
	for _, s := range []string{"Prévenir l’équipe — naïve café", "version 2024-01-15", "日本語のテキスト"} {
		if got := ScanText(s, true); len(got) != 0 {
			t.Errorf("ScanText(%q) = %+v, want none", s, got)
		}
	}
}

// FuzzScanText: the scanner never panics; findings are sorted, inside the
// text and at rune boundaries; and whatever the scanner finds in a text's
// NFKC form it finds in the text as written (compatibility forms hide
// nothing).
func FuzzScanText(f *testing.F) {
	for _, s := range []string{"alice＠example．com", "078-05-1120", "ｇｈｐ_aB3aB3aB3aB3aB3aB3aB3aB3aB3aB3aB3", "ﬁ ﬂ ㎏ ½ Ⅻ", "e\u0301\u0301\u0301", "plain text"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, prose bool) {
		got := ScanText(text, prose)
		for i, g := range got {
			if g.Offset < 0 || g.Offset > len(text) || i > 0 && got[i-1].Offset > g.Offset {
				t.Fatalf("findings out of order or outside the text: %+v", got)
			}
			if utf8.ValidString(text) && !utf8.RuneStart(text[min(g.Offset, len(text)-1)]) && g.Offset < len(text) {
				t.Fatalf("finding %+v is inside a character", g)
			}
		}
		if len(ScanText(norm.NFKC.String(text), prose)) > 0 && len(got) == 0 {
			t.Fatalf("found in the NFKC form but not as written")
		}
	})
}
