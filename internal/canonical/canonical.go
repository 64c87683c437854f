package canonical

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that [Transform]
// accepts. The top-level array or object has depth 1. It matches the limit
// of encoding/json.
const MaxDepth = 10000

// SyntaxError reports why input was refused and where.
type SyntaxError struct {
	// Offset is the byte offset in the input at which the problem was
	// detected.
	Offset int64
	// Msg describes the problem.
	Msg string
}

// Error returns "canonical JSON: <msg> at byte <offset>".
func (e *SyntaxError) Error() string {
	return "canonical JSON: " + e.Msg + " at byte " + strconv.FormatInt(e.Offset, 10)
}

// Transform parses in, which must hold exactly one JSON value optionally
// surrounded by whitespace, and returns its RFC 8785 canonical form in a
// newly allocated slice. On failure the error is a [*SyntaxError].
func Transform(in []byte) ([]byte, error) {
	out, err := Append(make([]byte, 0, len(in)+16), in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Append is like [Transform] but appends the canonical form of in to dst and
// returns the extended slice. On failure it returns dst unchanged (its spare
// capacity may have been written to) and a [*SyntaxError]. in must not
// overlap the spare capacity of dst.
func Append(dst, in []byte) ([]byte, error) {
	p := parserPool.Get().(*parser)
	p.in = in
	p.out = dst
	p.pos = 0
	p.depth = 0
	err := p.document()
	out := p.out
	p.release()
	if err != nil {
		return dst, err
	}
	return out, nil
}

// IsCanonical reports whether in is valid input to [Transform] and already
// in canonical form, that is whether Transform(in) would return a copy of in.
func IsCanonical(in []byte) bool {
	p := parserPool.Get().(*parser)
	buf := p.check[:0]
	if cap(buf) < len(in) {
		buf = make([]byte, 0, len(in)+16)
	}
	p.in = in
	p.out = buf
	p.pos = 0
	p.depth = 0
	err := p.document()
	ok := err == nil && bytes.Equal(p.out, in)
	p.check = p.out[:0]
	if cap(p.check) > maxRetained {
		p.check = nil
	}
	p.release()
	return ok
}

// Marshal returns the canonical form of the JSON encoding of v. It encodes v
// with encoding/json (so struct tags, Marshaler implementations and so on
// apply) and then canonicalizes the result with [Transform]. Errors from
// encoding/json are returned as they are; a failure of the canonicalization
// step (for instance two struct fields or map keys encoding to the same name
// through a custom Marshaler) is a [*SyntaxError] whose offset refers to
// the encoding/json output.
func Marshal(v any) ([]byte, error) {
	b := encPool.Get().(*bytes.Buffer)
	b.Reset()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		putEncBuffer(b)
		return nil, err
	}
	out, err := Transform(b.Bytes())
	putEncBuffer(b)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxRetained bounds the scratch memory a pooled parser keeps between calls.
const maxRetained = 16 << 20

var encPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putEncBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxRetained {
		encPool.Put(b)
	}
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// member records one object member while its object is being canonicalized.
type member struct {
	// start and end delimit the member (`"name":value`) in parser.out.
	start, end int
	// keyOff and keyEnd delimit the unescaped member name, in parser.out
	// when inKeys is false (the canonical string has no escapes, so its
	// content is the unescaped name) or in parser.keys when inKeys is true.
	keyOff, keyEnd int
	inKeys         bool
	// prefix is keyPrefix of the name.
	prefix uint64
	// src is the input offset of the name's opening quote.
	src int
}

type parser struct {
	in    []byte
	pos   int
	depth int
	out   []byte

	// members is a stack of the members of all objects being parsed.
	members []member
	// keys holds unescaped member names whose canonical form has escapes.
	keys []byte
	// tmp is scratch space for reordering members.
	tmp []byte
	// idx is scratch space for sorting members.
	idx []sortKey
	// check is the output buffer reused by IsCanonical.
	check []byte
}

func (p *parser) release() {
	p.in = nil
	p.out = nil
	if cap(p.tmp) > maxRetained {
		p.tmp = nil
	}
	if cap(p.keys) > maxRetained {
		p.keys = nil
	}
	if cap(p.members) > maxRetained/64 {
		p.members = nil
	}
	if cap(p.idx) > maxRetained/16 {
		p.idx = nil
	}
	p.members = p.members[:0]
	p.keys = p.keys[:0]
	parserPool.Put(p)
}

func (p *parser) fail(off int, msg string) error {
	return &SyntaxError{Offset: int64(off), Msg: msg}
}

// failChar reports an unexpected byte (or the end of input) at p.pos.
func (p *parser) failChar(context string) error {
	if p.pos >= len(p.in) {
		return p.fail(p.pos, "unexpected end of input "+context)
	}
	return p.fail(p.pos, "invalid character "+quoteByte(p.in[p.pos])+" "+context)
}

func quoteByte(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return "0x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:]
}

func (p *parser) skipWS() {
	in := p.in
	i := p.pos
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	p.pos = i
}

func (p *parser) document() error {
	p.skipWS()
	if err := p.value(); err != nil {
		return err
	}
	p.skipWS()
	if p.pos < len(p.in) {
		return p.fail(p.pos, "invalid character "+quoteByte(p.in[p.pos])+" after top-level value")
	}
	return nil
}

// value canonicalizes the value starting at p.pos (whitespace already
// skipped) and leaves p.pos just after it.
func (p *parser) value() error {
	if p.pos >= len(p.in) {
		return p.fail(p.pos, "unexpected end of input, expecting value")
	}
	switch c := p.in[p.pos]; c {
	case '"':
		_, err := p.str()
		return err
	case '{':
		return p.object()
	case '[':
		return p.array()
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number()
		}
		return p.failChar("looking for beginning of value")
	}
}

func (p *parser) literal(lit string) error {
	rest := p.in[p.pos:]
	for i := 0; i < len(lit); i++ {
		if i >= len(rest) || rest[i] != lit[i] {
			p.pos += i
			return p.failChar("in literal " + lit)
		}
	}
	p.out = append(p.out, lit...)
	p.pos += len(lit)
	return nil
}

func (p *parser) array() error {
	if p.depth >= MaxDepth {
		return p.fail(p.pos, "nesting deeper than "+strconv.Itoa(MaxDepth))
	}
	p.depth++
	p.out = append(p.out, '[')
	p.pos++
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		p.depth--
		return nil
	}
	for {
		if err := p.value(); err != nil {
			return err
		}
		p.skipWS()
		if p.pos < len(p.in) {
			switch p.in[p.pos] {
			case ',':
				p.pos++
				p.out = append(p.out, ',')
				p.skipWS()
				continue
			case ']':
				p.pos++
				p.out = append(p.out, ']')
				p.depth--
				return nil
			}
		}
		return p.failChar("after array element")
	}
}

func (p *parser) object() error {
	if p.depth >= MaxDepth {
		return p.fail(p.pos, "nesting deeper than "+strconv.Itoa(MaxDepth))
	}
	p.depth++
	open := len(p.out)
	p.out = append(p.out, '{')
	p.pos++
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		p.depth--
		return nil
	}
	base := len(p.members)
	keysBase := len(p.keys)
	for {
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.failChar("looking for beginning of object member name")
		}
		m := member{start: len(p.out), src: p.pos}
		escaped, err := p.str()
		if err != nil {
			return err
		}
		m.keyOff, m.keyEnd = m.start+1, len(p.out)-1
		if escaped {
			k := len(p.keys)
			p.keys = unescapeCanonical(p.keys, p.out[m.keyOff:m.keyEnd])
			m.keyOff, m.keyEnd, m.inKeys = k, len(p.keys), true
		}
		m.prefix = keyPrefix(p.key(&m))
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.failChar("after object member name")
		}
		p.pos++
		p.out = append(p.out, ':')
		p.skipWS()
		if err := p.value(); err != nil {
			return err
		}
		m.end = len(p.out)
		p.members = append(p.members, m)
		p.skipWS()
		if p.pos < len(p.in) {
			c := p.in[p.pos]
			if c == ',' {
				p.pos++
				p.out = append(p.out, ',')
				p.skipWS()
				continue
			}
			if c == '}' {
				p.pos++
				break
			}
		}
		return p.failChar("after object member")
	}
	if err := p.order(open, p.members[base:]); err != nil {
		return err
	}
	p.out = append(p.out, '}')
	p.members = p.members[:base]
	p.keys = p.keys[:keysBase]
	p.depth--
	return nil
}

func (p *parser) key(m *member) []byte {
	if m.inKeys {
		return p.keys[m.keyOff:m.keyEnd]
	}
	return p.out[m.keyOff:m.keyEnd]
}

// order sorts the members ms of the object whose '{' is at p.out[open], which
// extend to the end of p.out separated by commas, and refuses duplicates.
func (p *parser) order(open int, ms []member) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		c := p.compare(&ms[i-1], &ms[i])
		if c == 0 {
			return p.duplicate(&ms[i-1], &ms[i])
		}
		if c > 0 {
			sorted = false
		}
	}
	if sorted {
		return nil
	}
	idx := p.idx[:0]
	for i := range ms {
		idx = append(idx, sortKey{ms[i].prefix, i})
	}
	p.idx = idx
	slices.SortFunc(idx, func(a, b sortKey) int {
		if a.prefix != b.prefix {
			if a.prefix < b.prefix {
				return -1
			}
			return 1
		}
		return compareKeys(p.key(&ms[a.i]), p.key(&ms[b.i]))
	})
	for i := 1; i < len(idx); i++ {
		a, b := &ms[idx[i-1].i], &ms[idx[i].i]
		if p.compare(a, b) == 0 {
			return p.duplicate(a, b)
		}
	}
	// Rewrite the members in sorted order. Leading and trailing members
	// that keep their places stay where they are; the others are the same
	// set in both orders, so they occupy the same bytes.
	lo, hi := 0, len(idx)
	for lo < hi && idx[lo].i == lo {
		lo++
	}
	for hi > lo && idx[hi-1].i == hi-1 {
		hi--
	}
	from := ms[lo].start
	p.tmp = append(p.tmp[:0], p.out[from:ms[hi-1].end]...)
	w := from
	for j, k := range idx[lo:hi] {
		if j > 0 {
			p.out[w] = ','
			w++
		}
		m := &ms[k.i]
		w += copy(p.out[w:], p.tmp[m.start-from:m.end-from])
	}
	return nil
}

// sortKey is an object member's position in its object's members with the
// prefix of its name, for sorting.
type sortKey struct {
	prefix uint64
	i      int
}

func (p *parser) compare(a, b *member) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	return compareKeys(p.key(a), p.key(b))
}

// keyPrefix returns the first eight bytes of the valid UTF-8 string k, mapped
// by utf16Order and zero-padded, as a big-endian integer. If keyPrefix(a) <
// keyPrefix(b) then a sorts before b; if they are equal, either may sort
// first.
func keyPrefix(k []byte) uint64 {
	var x uint64
	n := min(len(k), 8)
	for _, c := range k[:n] {
		x = x<<8 | uint64(utf16Order[c])
	}
	return x << (8 * (8 - n))
}

// utf16Order maps UTF-8 bytes to values whose byte-wise order is the UTF-16
// code unit order of the characters; see compareKeys.
var utf16Order = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	// Lead bytes of supplementary characters (0xF0..0xF4, UTF-16 surrogate
	// pairs 0xD800..0xDBFF) sort before those of U+E000..U+FFFF (0xEE, 0xEF).
	for c := 0xF0; c <= 0xF4; c++ {
		t[c] = byte(c - 2)
	}
	t[0xEE], t[0xEF] = 0xF3, 0xF4
	return t
}()

func (p *parser) duplicate(a, b *member) error {
	off := max(a.src, b.src)
	return p.fail(off, "duplicate object member name "+strconv.Quote(string(p.key(a))))
}

// compareKeys compares two valid UTF-8 strings by their UTF-16 code units.
//
// UTF-8 byte order equals code point order, which equals UTF-16 code unit
// order except that characters at or above U+10000 (surrogate pairs, 0xD800
// to 0xDBFF first) sort before U+E000..U+FFFF in UTF-16. Because the common
// prefix is identical, the first differing bytes are at the same position
// within aligned characters; only when both are lead bytes, one of a
// supplementary character (0xF0..0xF4) and the other of U+E000..U+FFFF
// (0xEE, 0xEF), is the byte order reversed.
func compareKeys(a, b []byte) int {
	la, lb := len(a), len(b)
	n := min(la, lb)
	a, b = a[:n:n], b[:n:n]
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0) {
			x, y = y, x
		}
		if x < y {
			return -1
		}
		return 1
	}
	return la - lb
}

// unescapeCanonical appends to dst the decoding of s, the content of a
// canonical JSON string (whose only escapes are \" \\ \b \f \n \r \t and
// \u00xx).
func unescapeCanonical(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			dst = append(dst, unhex(s[i+3])<<4|unhex(s[i+4]))
			i += 4
		default: // '"' or '\\'
			dst = append(dst, s[i])
		}
	}
	return dst
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// plain marks the bytes that appear unchanged in a canonical string and need
// no checking: printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// special8 returns, for the eight bytes of x (first byte least significant),
// a mask whose lowest set bit is the high bit of the first byte that is not
// plain: a control character, '"', '\\' or a byte >= 0x80. It is zero if all
// eight are plain. (Bits above the lowest may be set spuriously.)
func special8(x uint64) uint64 {
	const lo = 0x0101010101010101
	const hi = 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	return (x | (x-lo*0x20)&^x | (q-lo)&^q | (b-lo)&^b) & hi
}

// str canonicalizes the string starting at p.pos (at its opening quote). It
// reports whether the canonical form contains an escape.
func (p *parser) str() (escaped bool, err error) {
	in := p.in
	start := p.pos
	i := start + 1
	run := i // start of the pending run of bytes to copy unchanged
	out := append(p.out, '"')
	for {
		// Skip eight plain bytes at a time, then finish byte by byte.
		for i+8 <= len(in) {
			if m := special8(binary.LittleEndian.Uint64(in[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(in) && plain[in[i]] {
			i++
		}
		if i >= len(in) {
			p.out = out
			return false, p.fail(len(in), "unexpected end of input in string starting at byte "+strconv.Itoa(start))
		}
		c := in[i]
		switch {
		case c == '"':
			out = append(out, in[run:i]...)
			p.out = append(out, '"')
			p.pos = i + 1
			return escaped, nil
		case c >= 0x80:
			if c >= 0xC2 && c < 0xE0 && i+1 < len(in) && in[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				p.out = out
				return false, p.fail(i, "invalid UTF-8 in string")
			}
			i += size
		case c == '\\':
			out = append(out, in[run:i]...)
			if i+1 >= len(in) {
				p.out = out
				return false, p.fail(len(in), "unexpected end of input in string escape")
			}
			esc := in[i+1]
			switch esc {
			case '"':
				out = append(out, '\\', '"')
				escaped = true
			case '\\':
				out = append(out, '\\', '\\')
				escaped = true
			case '/':
				out = append(out, '/')
			case 'b':
				out = append(out, '\\', 'b')
				escaped = true
			case 'f':
				out = append(out, '\\', 'f')
				escaped = true
			case 'n':
				out = append(out, '\\', 'n')
				escaped = true
			case 'r':
				out = append(out, '\\', 'r')
				escaped = true
			case 't':
				out = append(out, '\\', 't')
				escaped = true
			case 'u':
				r, ok := hex4(in, i+2)
				if !ok {
					p.out = out
					return false, p.fail(i, `invalid \u escape in string`)
				}
				switch {
				case r >= 0xD800 && r < 0xDC00:
					lo, ok := rune(0), false
					if i+7 < len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
						lo, ok = hex4(in, i+8)
					}
					if !ok || lo < 0xDC00 || lo >= 0xE000 {
						p.out = out
						return false, p.fail(i, `lone high surrogate \u`+string(in[i+2:i+6])+" in string")
					}
					out = utf8.AppendRune(out, 0x10000+(r-0xD800)<<10+(lo-0xDC00))
					i += 6
				case r >= 0xDC00 && r < 0xE000:
					p.out = out
					return false, p.fail(i, `lone low surrogate \u`+string(in[i+2:i+6])+" in string")
				case r < 0x20:
					escaped = true
					switch r {
					case '\b':
						out = append(out, '\\', 'b')
					case '\f':
						out = append(out, '\\', 'f')
					case '\n':
						out = append(out, '\\', 'n')
					case '\r':
						out = append(out, '\\', 'r')
					case '\t':
						out = append(out, '\\', 't')
					default:
						out = append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
					}
				case r == '"' || r == '\\':
					escaped = true
					out = append(out, '\\', byte(r))
				default:
					out = utf8.AppendRune(out, r)
				}
				i += 4
			default:
				p.out = out
				return false, p.fail(i, "invalid escape "+quoteByte(esc)+" in string")
			}
			i += 2
			run = i
		default: // control character
			p.out = out
			return false, p.fail(i, "unescaped control character "+quoteByte(c)+" in string")
		}
	}
}

// hex4 decodes the four hex digits at in[i:i+4].
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		d := unhex(c)
		if d == 0xff {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// number canonicalizes the number starting at p.pos.
func (p *parser) number() error {
	in := p.in
	start := p.pos
	i := start
	neg := in[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		i++
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.failChar("in number")
	}
	intDigits := i - intStart
	simple := true
	if i < len(in) && in[i] == '.' {
		i++
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			p.pos = i
			return p.failChar("after decimal point in number")
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		simple = false
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			p.pos = i
			return p.failChar("in exponent of number")
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		simple = false
	}
	p.pos = i
	// An integer of at most 15 digits is exactly representable and
	// ECMAScript prints it as is, except for -0.
	if simple && intDigits <= 15 {
		if neg && in[intStart] == '0' {
			p.out = append(p.out, '0')
		} else {
			p.out = append(p.out, in[start:i]...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(in[start:i]), 64)
	if err != nil {
		// The syntax has been checked, so this is overflow to ±Inf.
		return p.fail(start, "number "+abbrev(in[start:i])+" out of range of IEEE 754 binary64")
	}
	p.out = appendFloat(p.out, f)
	return nil
}

func abbrev(b []byte) string {
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

// appendFloat appends to dst the RFC 8785 (ECMAScript Number.prototype.toString)
// form of the finite number f and returns the extended slice. Negative zero
// is written as 0. It panics if f is NaN or infinite, which JSON cannot
// represent.
func appendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f != f || f > maxFloat || f < -maxFloat {
		panic("canonical: appendFloat of non-finite number")
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	// b is d[.ddd]e±dd[d]
	e := bytes.IndexByte(b, 'e')
	var digs [17]byte
	digs[0] = b[0]
	k := 1
	if e > 1 {
		k += copy(digs[1:], b[2:e])
	}
	x := 0
	for _, c := range b[e+2:] {
		x = x*10 + int(c-'0')
	}
	if b[e+1] == '-' {
		x = -x
	}
	d := digs[:k]
	n := x + 1 // f = 0.d × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

const maxFloat = 1.7976931348623157e308
