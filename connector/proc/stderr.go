package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of what a downstream server's stderr shows the operator, per
// start of the server: a line is cut at stderrLineMax bytes; lines pass
// at stderrRate bytes a second after a burst of stderrBurst; and after
// stderrTotal bytes of one start the rest is dropped. What is dropped is
// counted and said, in a line of oa's own.
const (
	stderrLineMax = 2 << 10
	stderrBurst   = 64 << 10
	stderrRate    = 16 << 10
	stderrTotal   = 4 << 20
)

// stderrWriter is what a server's stderr is copied into: every line the
// server writes reaches the operator as one line "[conn NAME] text", its
// text stripped of terminal escape sequences and control characters, so
// a server can neither write a line that reads as oa's own nor move the
// cursor, retitle the terminal or hide text. oa's own notices about the
// stream start "oa: connection NAME:", which no server line can.
type stderrWriter struct {
	out  io.Writer
	name string
	now  func() time.Time

	mu      sync.Mutex
	line    []byte // the current line, at most stderrLineMax bytes
	cutting bool   // the current line was cut: the rest of it is dropped
	tokens  float64
	last    time.Time
	shown   int64
	rateOff int64 // bytes dropped by the rate since the last notice
	overOff int64 // bytes dropped once the total bound was reached
	over    bool
}

// newStderr is the writer of one start of the server called name, or nil
// (the server's stderr discarded) when out is nil.
func newStderr(out io.Writer, name string) io.Writer {
	if out == nil {
		return nil
	}
	return &stderrWriter{out: out, name: stderrName(name), now: time.Now, tokens: stderrBurst}
}

// stderrFor is the stderr of one start of the server opts describe.
func stderrFor(opts Options) io.Writer { return newStderr(opts.Stderr, opts.Name) }

// stderrName is name as it is shown: a connection name (lower-case
// letters, digits and dashes) as it is, anything else replaced.
func stderrName(name string) string {
	ok := name != "" && len(name) <= 63 && !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
	if !ok {
		return "server"
	}
	return name
}

// Write takes any part of the stream; complete lines are shown (or
// dropped) as they end. It never fails, so a server's output can never
// break the copy from its pipe.
func (w *stderrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.take(p)
	return len(p), nil
}

// ReadFrom copies r to its end, then shows a last line the server did not
// end and says what was dropped. os/exec copies a server's stderr pipe
// through it, so the end of the server's output is the end of r.
func (w *stderrWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		_, _ = w.Write(buf[:k])
		if err != nil {
			w.Close()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}

// Close shows a last line left unended and says what was dropped.
func (w *stderrWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		w.emit(w.line, false, int64(len(w.line)))
		w.line = w.line[:0]
	}
	w.cutting = false
	w.noticeRate()
	if w.overOff > 0 {
		w.notice(fmt.Sprintf("%d bytes of stderr dropped (bound %d bytes a start)", w.overOff, stderrTotal))
		w.overOff = 0
	}
	return nil
}

// take splits p into lines.
func (w *stderrWriter) take(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		w.add(chunk)
		if i < 0 {
			return
		}
		if !w.cutting {
			w.emit(w.line, false, int64(len(w.line))+1)
		}
		w.line, w.cutting = w.line[:0], false
		p = p[i+1:]
	}
}

// add appends part of a line, cutting the line once it is too long.
func (w *stderrWriter) add(chunk []byte) {
	if w.cutting {
		return
	}
	room := stderrLineMax - len(w.line)
	if len(chunk) < room {
		w.line = append(w.line, chunk...)
		return
	}
	w.line = append(w.line, chunk[:room]...)
	w.emit(w.line, true, int64(len(w.line)))
	w.line, w.cutting = w.line[:0], true
}

// emit shows one line, or counts its n bytes of stderr dropped when over
// a bound.
func (w *stderrWriter) emit(raw []byte, cut bool, n int64) {
	text := "[conn " + w.name + "] " + sanitizeLine(raw)
	if cut {
		text += fmt.Sprintf(" … (line cut at %d bytes)", stderrLineMax)
	}
	text += "\n"
	size := int64(len(text))
	switch {
	case w.over:
		w.overOff += n
		return
	case w.shown+size > stderrTotal:
		w.over = true
		w.overOff += n
		w.notice(fmt.Sprintf("stderr reached its bound of %d bytes for this start; the rest is dropped", stderrTotal))
		return
	case !w.spend(size):
		w.rateOff += n
		return
	}
	w.noticeRate()
	w.shown += size
	_, _ = io.WriteString(w.out, text)
}

// spend takes size bytes from the rate's bucket, refilled for the time
// since the last line.
func (w *stderrWriter) spend(size int64) bool {
	now := w.now()
	if !w.last.IsZero() {
		if d := now.Sub(w.last).Seconds(); d > 0 {
			w.tokens = min(stderrBurst, w.tokens+d*stderrRate)
		}
	}
	w.last = now
	if w.tokens < float64(size) {
		return false
	}
	w.tokens -= float64(size)
	return true
}

// noticeRate says what the rate dropped since the last notice.
func (w *stderrWriter) noticeRate() {
	if w.rateOff > 0 {
		w.notice(fmt.Sprintf("%d bytes of stderr dropped (bound %d bytes a second)", w.rateOff, stderrRate))
		w.rateOff = 0
	}
}

// notice writes one line of oa's own about the stream; it counts to the
// total shown.
func (w *stderrWriter) notice(text string) {
	line := "oa: connection " + w.name + ": " + text + "\n"
	w.shown += int64(len(line))
	_, _ = io.WriteString(w.out, line)
}

// sanitizeLine is a line of a server's stderr as it may be shown: escape
// sequences (CSI, OSC, DCS and the rest) removed whole, every other
// control character but tab removed (C0, DEL, C1), as are the characters
// that reorder or break text (bidirectional controls, line and paragraph
// separators); bytes that are not UTF-8 become U+FFFD.
func sanitizeLine(b []byte) string {
	var out strings.Builder
	for i := 0; i < len(b); {
		if b[i] == 0x1b {
			i = skipEscape(b, i)
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if r == '\t' || !hidden(r) {
			out.WriteRune(r)
		}
	}
	return out.String()
}

// hidden reports whether r is a control character or one that changes
// how the text around it is laid out.
func hidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.In(r, unicode.Bidi_Control, unicode.Zl, unicode.Zp)
}

// skipEscape returns where the escape sequence starting at b[i] (ESC)
// ends (ECMA-48): a control sequence up to its final byte, a control
// string (OSC, DCS, SOS, PM, APC) up to BEL or ST, else ESC, its
// intermediate bytes and its final byte. A sequence cut short by the end
// of the line ends there.
func skipEscape(b []byte, i int) int {
	i++
	if i >= len(b) {
		return i
	}
	switch c := b[i]; {
	case c == '[':
		i++
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
			i++
		}
		if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e {
			i++
		}
		return i
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(b, i+1)
	case c >= 0x20 && c <= 0x2f:
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
			i++
		}
		if i < len(b) && b[i] >= 0x30 && b[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		return i + 1
	}
	return i
}

// skipString returns the end of a control string starting at b[i]: just
// after its BEL or ST (ESC \), or the end of the line.
func skipString(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch {
		case b[i] == 0x07:
			return i + 1
		case b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\':
			return i + 2
		}
	}
	return i
}
