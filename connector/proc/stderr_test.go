package proc

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

// lockedBuffer is the operator's stderr, written from the copy goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// testStderr is the writer of server "crm" over out, on clock.
func testStderr(out io.Writer, clock *fakeClock) *stderrWriter {
	w := newStderr(out, "crm").(*stderrWriter)
	w.now = clock.now
	return w
}

// lineShape is what every line the operator sees is: a server line under
// its prefix, or oa's own notice; never a control character but tab.
var lineShape = regexp.MustCompile(`^(\[conn crm\] [^\x00-\x08\x0a-\x1f\x7f]*|oa: connection crm: [ -~]+)$`)

// shownLines splits out into lines, failing unless every one has the
// shape of lineShape and the output ends with a newline.
func shownLines(t *testing.T, out string) []string {
	t.Helper()
	if out == "" {
		return nil
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("the output does not end with a newline: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if !lineShape.MatchString(l) || !utf8.ValidString(l) {
			t.Fatalf("a line breaks the shape: %q", l)
		}
	}
	return lines
}

// TestStderrLinesArePrefixedAndClean: each line a server writes reaches
// the operator under "[conn NAME] ", without escape sequences or control
// characters, so it can neither pass for oa's own line (a carriage return
// back to the start of the line, a line break mid-write, a cursor move),
// nor retitle or recolour the terminal; text split across writes is one
// line; a last unended line is shown at the end.
func TestStderrLinesArePrefixedAndClean(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\n", "[conn crm] plain text"},
		{"tab\tkept\n", "[conn crm] tab\tkept"},
		{"x\roa coordinator: ready: Dr Ada answered\n", "[conn crm] xoa coordinator: ready: Dr Ada answered"},
		{"\x1b[2K\x1b[1Goa coordinator: decided\n", "[conn crm] oa coordinator: decided"},
		{"\x1b]0;pwned\x07title\n", "[conn crm] title"},
		{"\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\n", "[conn crm] link"},
		{"\x1b[31mred\x1b[0m \x1bPdcs\x1b\\ \x1b(Bcharset \x1b7saved\n", "[conn crm] red  charset saved"},
		{"bell\x07 nul\x00 del\x7f c1\u009b31m bidi\u202eevil\u2066 sep\u2028x\n", "[conn crm] bell nul del c131m bidievil sepx"},
		{"bad utf8 \xff\xfe\n", "[conn crm] bad utf8 \ufffd\ufffd"},
		{"cut escape \x1b[", "[conn crm] cut escape "},
	}
	for _, c := range cases {
		var out lockedBuffer
		w := testStderr(&out, &fakeClock{t: time.Unix(0, 0)})
		_, _ = w.Write([]byte(c.in))
		_ = w.Close()
		lines := shownLines(t, out.String())
		if len(lines) != 1 || lines[0] != c.want {
			t.Errorf("%q shows %q, want %q", c.in, lines, c.want)
		}
	}
	var out lockedBuffer
	w := testStderr(&out, &fakeClock{t: time.Unix(0, 0)})
	for _, part := range []string{"one ", "line\ntwo\x1b", "[1m lines\n"} {
		_, _ = w.Write([]byte(part))
	}
	if got := shownLines(t, out.String()); len(got) != 2 || got[1] != "[conn crm] two lines" {
		t.Fatalf("parts of lines: %q", got)
	}
}

// TestStderrBounds: a line over stderrLineMax is shown cut and says so;
// a flood past the burst is dropped at the rate and said in one line of
// oa's own when lines pass again; past stderrTotal of one start the rest
// is dropped, said once when it starts and counted at the end. The clock
// is the test's: nothing depends on how fast the machine is.
func TestStderrBounds(t *testing.T) {
	var out lockedBuffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	w := testStderr(&out, clock)
	_, _ = w.Write([]byte(strings.Repeat("y", 3*stderrLineMax) + "\nnext\n"))
	lines := shownLines(t, out.String())
	want := fmt.Sprintf("[conn crm] %s … (line cut at %d bytes)", strings.Repeat("y", stderrLineMax), stderrLineMax)
	if len(lines) != 2 || lines[0] != want || lines[1] != "[conn crm] next" {
		t.Fatalf("a long line: %q", lines)
	}

	out = lockedBuffer{}
	w = testStderr(&out, clock)
	line := strings.Repeat("z", 99) + "\n"
	flood := strings.Repeat(line, 22<<20/len(line))
	_, _ = w.Write([]byte(flood))
	shown := len(out.String())
	if shown > stderrBurst || shown < stderrBurst/2 {
		t.Fatalf("a flood at one instant showed %d bytes, the burst is %d", shown, stderrBurst)
	}
	clock.t = clock.t.Add(time.Second)
	_, _ = w.Write([]byte("after a second\n"))
	lines = shownLines(t, out.String())
	notice := regexp.MustCompile(`^oa: connection crm: ([0-9]+) bytes of stderr dropped \(bound 16384 bytes a second\)$`)
	m := notice.FindStringSubmatch(lines[len(lines)-2])
	if m == nil || lines[len(lines)-1] != "[conn crm] after a second" {
		t.Fatalf("no rate notice before the next line: %q", lines[len(lines)-2:])
	}
	if dropped := len(flood) - (len(lines)-2)*len(line); m[1] != fmt.Sprint(dropped) {
		t.Fatalf("the notice says %s bytes dropped, %d were", m[1], dropped)
	}

	out = lockedBuffer{}
	w = testStderr(&out, clock)
	for range 2 * stderrTotal / stderrRate {
		clock.t = clock.t.Add(time.Second)
		_, _ = w.Write([]byte(strings.Repeat(line, stderrRate/len(line)-1)))
	}
	_ = w.Close()
	if n := len(out.String()); n > stderrTotal+1024 {
		t.Fatalf("one start showed %d bytes, the bound is %d", n, stderrTotal)
	}
	lines = shownLines(t, out.String())
	if got := strings.Join(lines[len(lines)-1:], ""); !regexp.MustCompile(`^oa: connection crm: [0-9]+ bytes of stderr dropped \(bound 4194304 bytes a start\)$`).MatchString(got) {
		t.Fatalf("no end notice of the total: %q", got)
	}
	if c := strings.Count(out.String(), "reached its bound"); c != 1 {
		t.Fatalf("the total bound was said %d times", c)
	}
}

// TestStderrReadFromEndsTheStream: os/exec copies the pipe through
// ReadFrom; the end of the pipe shows the unended last line and the
// notices, and a failed read still does.
func TestStderrReadFromEndsTheStream(t *testing.T) {
	var out lockedBuffer
	w := testStderr(&out, &fakeClock{t: time.Unix(0, 0)})
	if _, err := w.ReadFrom(strings.NewReader("first\nlast, unended")); err != nil {
		t.Fatal(err)
	}
	if got := shownLines(t, out.String()); len(got) != 2 || got[1] != "[conn crm] last, unended" {
		t.Fatalf("the end of the stream: %q", got)
	}
	out = lockedBuffer{}
	w = testStderr(&out, &fakeClock{t: time.Unix(0, 0)})
	if _, err := w.ReadFrom(io.MultiReader(strings.NewReader("half"), iotest.ErrReader(io.ErrUnexpectedEOF))); err == nil {
		t.Fatal("a failed read is not reported")
	}
	if got := shownLines(t, out.String()); len(got) != 1 || got[0] != "[conn crm] half" {
		t.Fatalf("after a failed read: %q", got)
	}
}

// TestStderrNames: a name that is not a connection name is not shown;
// no writer when there is nowhere to write.
func TestStderrNames(t *testing.T) {
	if newStderr(nil, "crm") != nil {
		t.Fatal("a writer for no output")
	}
	for _, name := range []string{"", "Crm", "a] [conn b", "x\x1b[2K", strings.Repeat("a", 64)} {
		if got := stderrName(name); got != "server" {
			t.Errorf("name %q shown as %q", name, got)
		}
	}
	if got := stderrName("billing-2"); got != "billing-2" {
		t.Fatalf("a connection name shown as %q", got)
	}
}

// FuzzStderr: whatever a server writes, in whatever pieces, every line
// the operator sees has the shape of a server line or oa's notice, is
// valid UTF-8 without control characters, and the whole stays within the
// bounds.
func FuzzStderr(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b[2J\x1b[H", "\x1b]0;t\x07x\n", "\r\roa: refused\n", "\xff\xc2\x9b\u202e\n", strings.Repeat("q", 5000)} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		var out lockedBuffer
		w := testStderr(&out, &fakeClock{t: time.Unix(0, 0)})
		n := int(step%64) + 1
		for p := data; len(p) > 0; {
			k := min(n, len(p))
			_, _ = w.Write(p[:k])
			p = p[k:]
		}
		_ = w.Close()
		for _, l := range shownLines(t, out.String()) {
			if len(l) > len("[conn crm] ")+4*stderrLineMax+64 {
				t.Fatalf("a line of %d bytes", len(l))
			}
		}
		if len(out.String()) > stderrBurst+512 {
			t.Fatalf("%d bytes shown at one instant", len(out.String()))
		}
	})
}
