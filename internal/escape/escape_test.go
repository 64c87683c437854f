package escape_test

import (
	"fmt"
	"testing"

	"github.com/oa-dev/oa/internal/escape"
)

// TestControls: controls, separators and bidi controls are escaped, the
// line break kept, bytes that are not UTF-8 replaced; OneLine folds white
// space first.
func TestControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain\nnext":     "plain\nnext",
		"\x1b[31mred\x07": `\u001b[31mred\u0007`,
		"a\u2028b\u202ec": `a\u2028b\u202ec`,
		"bad \xff byte":   "bad \uFFFD byte",
		"tab\there\r":     `tab\u0009here\u000d`,
	} {
		if got := escape.Controls(in); got != want {
			t.Errorf("Controls(%q) = %q, want %q", in, got, want)
		}
	}
	if got := escape.OneLine(" two\n lines\t\x1b "); got != `two lines \u001b` {
		t.Errorf("OneLine = %q", got)
	}
}

func ExampleOneLine() {
	fmt.Println(escape.OneLine("Approve the\n\x1b[2Jnote?"))
	// Output: Approve the \u001b[2Jnote?
}
