package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func mustTransform(t *testing.T, in string) string {
	t.Helper()
	out, err := Transform([]byte(in))
	if err != nil {
		t.Fatalf("Transform(%q): %v", in, err)
	}
	return string(out)
}

// RFC 8785 section 3.2.2 (and Appendix's "values" sample).
func TestRFC8785MainExample(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	if got := mustTransform(t, in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// RFC 8785 section 3.2.3: sorting by UTF-16 code units.
func TestRFC8785Sorting(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","` + "\ufb33" + `":"Hebrew Letter Dalet With Dagesh"}`
	if got := mustTransform(t, in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Samples from the JCS reference implementation's test data.
func TestReferenceSamples(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"arrays", "[\n  56,\n  {\n    \"d\": true,\n    \"10\": null,\n    \"1\": [ ]\n  }\n]",
			`[56,{"1":[],"10":null,"d":true}]`},
		{"structures", "{\n  \"1\": {\"f\": {\"f\": \"hi\",\"F\": 5} ,\"\\n\": 56.0},\n  \"10\": { },\n  \"\": \"empty\",\n  \"a\": { },\n  \"111\": [ { } ],\n  \"A\": { }\n}",
			`{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}`},
		{"french", "{\n  \"peach\": \"This sorting order\",\n  \"péché\": \"is wrong according to French\",\n  \"pêche\": \"but canonicalization MUST\",\n  \"sin\":   \"ingnore locale\"\n}\n",
			`{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ingnore locale"}`},
		{"unicode", "{\n  \"Unnormalized Unicode\":\"\\u1e0d\\u0307\"\n}\n",
			"{\"Unnormalized Unicode\":\"\u1e0d\u0307\"}"},
		{"weird", "{\n  \"\\u20ac\": \"Euro Sign\",\n  \"1\": \"One\",\n  \"\\u0080\": \"Control\\u007f\",\n  \"\\ud83d\\ude02\": \"Smiley\",\n  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\",\n  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n  \"</script>\": \"Browser Challenge\"\n}\n",
			"{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\u0080\":\"Control\u007f\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😂\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	}
	for _, tt := range tests {
		if got := mustTransform(t, tt.in); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// RFC 8785 Appendix B.
var appendixB = []struct {
	bits uint64
	want string
}{
	{0x0000000000000000, "0"},
	{0x8000000000000000, "0"},
	{0x0000000000000001, "5e-324"},
	{0x8000000000000001, "-5e-324"},
	{0x7fefffffffffffff, "1.7976931348623157e+308"},
	{0xffefffffffffffff, "-1.7976931348623157e+308"},
	{0x4340000000000000, "9007199254740992"},
	{0xc340000000000000, "-9007199254740992"},
	{0x4430000000000000, "295147905179352830000"},
	{0x44b52d02c7e14af5, "9.999999999999997e+22"},
	{0x44b52d02c7e14af6, "1e+23"},
	{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
	{0x444b1ae4d6e2ef4e, "999999999999999700000"},
	{0x444b1ae4d6e2ef4f, "999999999999999900000"},
	{0x444b1ae4d6e2ef50, "1e+21"},
	{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
	{0x3eb0c6f7a0b5ed8d, "0.000001"},
	{0x41b3de4355555553, "333333333.3333332"},
	{0x41b3de4355555554, "333333333.33333325"},
	{0x41b3de4355555555, "333333333.3333333"},
	{0x41b3de4355555556, "333333333.3333334"},
	{0x41b3de4355555557, "333333333.33333343"},
	{0xbecbf647612f3696, "-0.0000033333333333333333"},
	{0x43143ff3c1cb0959, "1424953923781206.2"},
}

func TestAppendixBNumbers(t *testing.T) {
	for _, tt := range appendixB {
		f := math.Float64frombits(tt.bits)
		if got := string(appendFloat(nil, f)); got != tt.want {
			t.Errorf("appendFloat(%#016x) = %s, want %s", tt.bits, got, tt.want)
		}
		// The same through Transform, from several spellings of f.
		for _, in := range []string{
			strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(f, 'e', 30, 64),
			strconv.FormatFloat(f, 'E', -1, 64),
			"[" + strconv.FormatFloat(f, 'f', -1, 64) + "]",
		} {
			want := tt.want
			if in[0] == '[' {
				want = "[" + want + "]"
			}
			if got := mustTransform(t, in); got != want {
				t.Errorf("Transform(%s) = %s, want %s", in, got, want)
			}
		}
	}
}

func TestNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"-0e10", "0"},
		{"0.0", "0"},
		{"1.0", "1"},
		{"-1", "-1"},
		{"1E2", "100"},
		{"1e+2", "100"},
		{"100e-2", "1"},
		{"0.1", "0.1"},
		{"1e-6", "0.000001"},
		{"1e-7", "1e-7"},
		{"1.5e-7", "1.5e-7"},
		{"123e-20", "1.23e-18"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"1.5e300", "1.5e+300"},
		{"-1.5e-300", "-1.5e-300"},
		{"123456789012345", "123456789012345"},
		{"-123456789012345", "-123456789012345"},
		{"1234567890123456", "1234567890123456"},
		{"9007199254740993", "9007199254740992"},
		{"12345678901234567890", "12345678901234567000"},
		{"1152921504606846976", "1152921504606847000"},
		{"0.30000000000000004", "0.30000000000000004"},
		{"1e-400", "0"},
		{"-1e-400", "0"},
		{"2.4703282292062328e-324", "5e-324"},
		{"1797693134862315708145274237317043567981e269", "1.7976931348623157e+308"},
		{"0e99999999999999999999", "0"},
		{"1" + strings.Repeat("0", 400) + "e-400", "1"},
	}
	for _, tt := range tests {
		if got := mustTransform(t, tt.in); got != tt.want {
			t.Errorf("Transform(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestNumbersRoundTrip checks appendFloat on random values against the
// properties of the ECMAScript algorithm: it parses back to the same value,
// uses the shortest digits, and chooses the notation by magnitude.
func TestNumbersRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		var f float64
		switch i % 3 {
		case 0:
			f = math.Float64frombits(r.Uint64())
		case 1:
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		default:
			f = float64(r.Int64N(1<<62)) * math.Pow(10, float64(r.IntN(10)))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := string(appendFloat(nil, f))
		g, err := strconv.ParseFloat(s, 64)
		if err != nil || g != f {
			t.Fatalf("%v: %s parses as %v, %v", f, s, g, err)
		}
		a := math.Abs(f)
		hasExp := strings.ContainsRune(s, 'e')
		if wantExp := a != 0 && (a >= 1e21 || a < 1e-6); hasExp != wantExp {
			t.Fatalf("%v: %s: exponent form %v, want %v", f, s, hasExp, wantExp)
		}
		if hasExp {
			if want := strings.Replace(strconv.FormatFloat(f, 'e', -1, 64), "e-0", "e-", 1); strings.Replace(want, "e+0", "e+", 1) != s {
				t.Fatalf("%v: %s, want %s", f, s, want)
			}
		} else if a >= 1e-6 && a < 1e21 {
			// Digits equal the shortest representation's.
			e := strconv.FormatFloat(f, 'e', -1, 64)
			digits := strings.TrimLeft(strings.ReplaceAll(strings.Split(e, "e")[0], ".", ""), "-")
			got := strings.TrimRight(strings.TrimLeft(strings.ReplaceAll(strings.TrimLeft(s, "-"), ".", ""), "0"), "0")
			if got != strings.TrimRight(digits, "0") {
				t.Fatalf("%v: %s has digits %s, want %s", f, s, got, digits)
			}
		}
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`""`, `""`},
		{`"abc"`, `"abc"`},
		{`"\u0000\u0001\u001f\u001F"`, `"\u0000\u0001\u001f\u001f"`},
		{`"\b\f\n\r\t\u0008\u000C\u000A\u000d\u0009"`, `"\b\f\n\r\t\b\f\n\r\t"`},
		{`"\u000b\u007f"`, "\"\\u000b\u007f\""},
		{`"\/\"\\\u0022\u005C\u002f"`, `"/\"\\\"\\/"`},
		{`"\u2028\u2029<>&\u003c\u003e\u0026"`, "\"\u2028\u2029<>&<>&\""},
		{"\"\u2028\u00e9\U0001F600\"", "\"\u2028\u00e9\U0001F600\""},
		{`"\u00e9\u00E9\uFFFF\uffFe\uD83D\uDE00"`, "\"\u00e9\u00e9\uffff\ufffe\U0001F600\""},
		{`"\udbff\udfff"`, "\"\U0010FFFF\""},
		{`"\ufffd"`, "\"\ufffd\""},
		{"\"\ufffd\"", "\"\ufffd\""},
		{"\"\x7f\"", "\"\x7f\""},
		{`"\ud800\udc00x\u0041"`, "\"\U00010000xA\""},
	}
	for _, tt := range tests {
		if got := mustTransform(t, tt.in); got != tt.want {
			t.Errorf("Transform(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStructure(t *testing.T) {
	tests := []struct{ in, want string }{
		{" \t\r\n true \t\r\n", "true"},
		{"false", "false"},
		{"null", "null"},
		{"[]", "[]"},
		{"{}", "{}"},
		{"[ ]", "[]"},
		{"{ }", "{}"},
		{`[1 , [ 2 , { } ] , { "b" : 1 , "a" : [ ] } ]`, `[1,[2,{}],{"a":[],"b":1}]`},
		{`{"b":{"d":1,"c":2},"a":{"f":[{"z":1,"y":2}],"e":3}}`, `{"a":{"e":3,"f":[{"y":2,"z":1}]},"b":{"c":2,"d":1}}`},
		// Names differing only by escapes or sorting before/after escaped text.
		{`{"a\"":1,"a":2,"a\\":3,"a\n":4,"a\u0000":5,"a!":6}`, `{"a":2,"a\u0000":5,"a\n":4,"a!":6,"a\"":1,"a\\":3}`},
		// U+E000..U+FFFF sort after supplementary characters in UTF-16.
		{"{\"\\ue000\":1,\"\\ud800\\udc00\":2,\"\\uffff\":3,\"\\udbff\\udfff\":4,\"\\ud7ff\":5}",
			"{\"\ud7ff\":5,\"\U00010000\":2,\"\U0010ffff\":4,\"\ue000\":1,\"\uffff\":3}"},
		{"{\"x\U0001F600\":1,\"x\uff01\":2,\"x\":3}", "{\"x\":3,\"x\U0001F600\":1,\"x\uff01\":2}"},
	}
	for _, tt := range tests {
		if got := mustTransform(t, tt.in); got != tt.want {
			t.Errorf("Transform(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if got := mustTransform(t, ok); got != ok {
		t.Errorf("depth %d not preserved", MaxDepth)
	}
	okObj := strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)
	if got := mustTransform(t, okObj); got != okObj {
		t.Errorf("object depth %d not preserved", MaxDepth)
	}
}

func TestCompareKeysUTF16(t *testing.T) {
	// Check against a direct comparison of UTF-16 code units on random
	// strings drawn from characters around the interesting boundaries.
	alphabet := []rune{0, 'a', 'b', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfb33, 0xffff,
		0x10000, 0x1f600, 0x10ffff}
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() string {
		n := r.IntN(4)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(rs)
	}
	for i := 0; i < 100000; i++ {
		a, b := gen(), gen()
		want := compareUnits(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		got := compareKeys([]byte(a), []byte(b))
		if sign(got) != want {
			t.Fatalf("compareKeys(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
}

func compareUnits(a, b []uint16) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return sign(len(a) - len(b))
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestRefusals(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	deepObj := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	tests := []struct {
		kind, in string
		off      int64
		msg      string
	}{
		// Invalid JSON.
		{"syntax", ``, 0, "unexpected end of input"},
		{"syntax", `   `, 3, "unexpected end of input"},
		{"syntax", `[1,]`, 3, "looking for beginning of value"},
		{"syntax", `[1 2]`, 3, "after array element"},
		{"syntax", `{"a" 1}`, 5, "after object member name"},
		{"syntax", `{"a":1,}`, 7, "looking for beginning of object member name"},
		{"syntax", `{a:1}`, 1, "looking for beginning of object member name"},
		{"syntax", `{"a":1`, 6, "unexpected end of input after object member"},
		{"syntax", `[`, 1, "unexpected end of input"},
		{"syntax", `"abc`, 4, "unexpected end of input in string"},
		{"syntax", `"\`, 2, "unexpected end of input in string escape"},
		{"syntax", `"\x"`, 1, `invalid escape 'x'`},
		{"syntax", `"\u12"`, 1, `invalid \u escape`},
		{"syntax", `"\u12g4"`, 1, `invalid \u escape`},
		{"syntax", "\"a\tb\"", 2, "unescaped control character 0x09"},
		{"syntax", "\"\x00\"", 1, "unescaped control character 0x00"},
		{"syntax", `tru`, 3, "unexpected end of input in literal true"},
		{"syntax", `nul1`, 3, "invalid character '1' in literal null"},
		{"syntax", `True`, 0, "looking for beginning of value"},
		{"syntax", `01`, 1, "after top-level value"},
		{"syntax", `-`, 1, "in number"},
		{"syntax", `-a`, 1, "in number"},
		{"syntax", `+1`, 0, "looking for beginning of value"},
		{"syntax", `.5`, 0, "looking for beginning of value"},
		{"syntax", `1.`, 2, "after decimal point"},
		{"syntax", `1.e5`, 2, "after decimal point"},
		{"syntax", `1e`, 2, "in exponent"},
		{"syntax", `1e+`, 3, "in exponent"},
		{"syntax", `NaN`, 0, "looking for beginning of value"},
		{"syntax", `Infinity`, 0, "looking for beginning of value"},
		{"syntax", "\xef\xbb\xbf{}", 0, "looking for beginning of value"},
		{"syntax", `[1]]`, 3, "after top-level value"},
		// Invalid UTF-8.
		{"utf8", "\"\xff\"", 1, "invalid UTF-8"},
		{"utf8", "\"ab\xc3\"", 3, "invalid UTF-8"},
		{"utf8", "\"\xc0\x80\"", 1, "invalid UTF-8"},         // overlong
		{"utf8", "\"\xed\xa0\x80\"", 1, "invalid UTF-8"},     // encoded surrogate
		{"utf8", "\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8"}, // > U+10FFFF
		{"utf8", "{\"\x80\":1}", 2, "invalid UTF-8"},
		{"utf8", "\"\xe2\x82\"", 1, "invalid UTF-8"},
		// Lone surrogates.
		{"surrogate", `"\ud800"`, 1, "lone high surrogate"},
		{"surrogate", `"\uD800x"`, 1, "lone high surrogate"},
		{"surrogate", `"ab\ud83d\u0041"`, 3, "lone high surrogate"},
		{"surrogate", `"\ud800\ud800"`, 1, "lone high surrogate"},
		{"surrogate", `"\ud800\`, 1, "lone high surrogate"},
		{"surrogate", `"\udc00"`, 1, "lone low surrogate"},
		{"surrogate", `"\ude00\ud83d"`, 1, "lone low surrogate"},
		{"surrogate", `{"\udfff":1}`, 2, "lone low surrogate"},
		// Duplicate member names.
		{"duplicate", `{"a":1,"a":2}`, 7, `duplicate object member name "a"`},
		{"duplicate", `{"a":1,"b":2,"a":3}`, 13, `duplicate object member name "a"`},
		{"duplicate", `{"a":1,"\u0061":2}`, 7, `duplicate object member name "a"`},
		{"duplicate", `{"\n":1,"\u000a":2}`, 8, `duplicate object member name "\n"`},
		{"duplicate", `{"\"":1,"\u0022":2}`, 8, `duplicate object member name "\""`},
		{"duplicate", `{"😀":1,"\ud83d\ude00":2}`, 10, `duplicate object member name "😀"`},
		{"duplicate", `[{"x":{"y":1,"y":{}}}]`, 13, `duplicate object member name "y"`},
		{"duplicate", `{"b":1,"c":2,"a":3,"b":4}`, 19, `duplicate object member name "b"`},
		// Not finite in binary64.
		{"range", `1e400`, 0, "out of range"},
		{"range", `[-1e400]`, 1, "out of range"},
		{"range", `{"a":1.8e308}`, 5, "out of range"},
		{"range", "1" + strings.Repeat("0", 400), 0, "out of range"},
		// Trailing data.
		{"trailing", `1 2`, 2, "after top-level value"},
		{"trailing", `{} x`, 3, "after top-level value"},
		{"trailing", `"a""b"`, 3, "after top-level value"},
		{"trailing", "null\x00", 4, "after top-level value"},
		// Nesting too deep.
		{"depth", deep, MaxDepth, "nesting deeper than 10000"},
		{"depth", deepObj, 5 * MaxDepth, "nesting deeper than 10000"},
	}
	for _, tt := range tests {
		out, err := Transform([]byte(tt.in))
		name := tt.kind + " " + strconv.Quote(abbrev([]byte(tt.in)))
		if err == nil {
			t.Errorf("%s: accepted, gave %s", name, out)
			continue
		}
		if out != nil {
			t.Errorf("%s: non-nil output with error", name)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: error %T is not *SyntaxError", name, err)
			continue
		}
		if se.Offset != tt.off || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("%s: got %q at %d, want %q at %d", name, se.Msg, se.Offset, tt.msg, tt.off)
		}
		if IsCanonical([]byte(tt.in)) {
			t.Errorf("%s: IsCanonical true", name)
		}
	}
}

func TestSyntaxErrorString(t *testing.T) {
	_, err := Transform([]byte(`{"a":1,"a":2}`))
	want := `canonical JSON: duplicate object member name "a" at byte 7`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestIsCanonical(t *testing.T) {
	yes := []string{`{}`, `[1,"a",{"a":null,"b":[true,false]}]`, `1e+21`, `0.000001`, `"\u001f"`, "\"\u2028\""}
	no := []string{` {}`, `{} `, `[1, 2]`, `{"b":1,"a":2}`, `1.0`, `-0`, `"\u0041"`, `"\/"`, `1E+21`, `"\u001F"`, `{"a":1,"a":1}`, ``}
	for _, s := range yes {
		if !IsCanonical([]byte(s)) {
			t.Errorf("IsCanonical(%s) = false", s)
		}
	}
	for _, s := range no {
		if IsCanonical([]byte(s)) {
			t.Errorf("IsCanonical(%s) = true", s)
		}
	}
}

func TestAppend(t *testing.T) {
	dst := []byte("prefix:")
	out, err := Append(dst, []byte(`{"z":1, "a" : {"y":2,"b":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `prefix:{"a":{"b":3,"y":2},"z":1}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	out, err = Append(dst, []byte(`{"z":1,`))
	if err == nil || !bytes.Equal(out, dst) {
		t.Errorf("Append on error = %q, %v; want dst and an error", out, err)
	}
}

type marshalInner struct {
	Zeta  string  `json:"zeta"`
	Alpha float64 `json:"alpha"`
}

type marshalOuter struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Labels map[string]string `json:"labels"`
	Items  []marshalInner    `json:"items"`
	HTML   string            `json:"html"`
	Nil    *marshalInner     `json:"nil"`
}

func TestMarshal(t *testing.T) {
	v := marshalOuter{
		Name:   "wörker\u2028",
		Count:  3,
		Labels: map[string]string{"\ufb33": "x", "\U0001F600": "y", "b": "z"},
		Items:  []marshalInner{{"z", 1.0}, {"y", 1e21}, {"x", 0.0000001}},
		HTML:   "<a&b>",
	}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"count\":3,\"html\":\"<a&b>\",\"items\":[{\"alpha\":1,\"zeta\":\"z\"},{\"alpha\":1e+21,\"zeta\":\"y\"},{\"alpha\":1e-7,\"zeta\":\"x\"}]," +
		"\"labels\":{\"b\":\"z\",\"\U0001F600\":\"y\",\"\ufb33\":\"x\"},\"name\":\"wörker\u2028\",\"nil\":null}"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := Marshal(math.NaN()); err == nil {
		t.Error("Marshal(NaN) succeeded")
	}
	if _, err := Marshal(map[string]any{"a": make(chan int)}); err == nil {
		t.Error("Marshal(chan) succeeded")
	}
}

func TestOutputIsValidUTF8(t *testing.T) {
	out := mustTransform(t, `{"\ud83d\ude00":"\u00e9\ud800\udc00"}`)
	if !utf8.ValidString(out) {
		t.Errorf("invalid UTF-8 output %q", out)
	}
}

func TestSpecial8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, 0x01, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 'a', 0x7f, 0x80, 0xbf, 0xc3, 0xff}
	var buf [8]byte
	for n := 0; n < 1000000; n++ {
		for i := range buf {
			if n%2 == 0 {
				buf[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				buf[i] = byte(r.Uint32())
			}
		}
		want := 8
		for i, c := range buf {
			if !plain[c] {
				want = i
				break
			}
		}
		m := special8(uint64(buf[0]) | uint64(buf[1])<<8 | uint64(buf[2])<<16 | uint64(buf[3])<<24 |
			uint64(buf[4])<<32 | uint64(buf[5])<<40 | uint64(buf[6])<<48 | uint64(buf[7])<<56)
		got := 8
		if m != 0 {
			got = 0
			for m&0xff == 0 {
				m >>= 8
				got++
			}
		}
		if got != want {
			t.Fatalf("special8(% x): first special at %d, want %d", buf, got, want)
		}
	}
}

// TestRandomDifferential compares Transform with the reference serializer
// on random documents written with random member order, escapes, number
// spellings and whitespace.
func TestRandomDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	keyRunes := []rune{'a', 'b', 'z', 'A', '0', '"', '\\', '/', '\n', 0x01, 0x7f, 0xe9, 0x20ac, 0xe000, 0xfb33, 0xffff, 0x1f600, 0x10000}
	ws := func(b *strings.Builder) {
		for r.IntN(4) == 0 {
			b.WriteByte(" \t\r\n"[r.IntN(4)])
		}
	}
	writeStr := func(b *strings.Builder, s string) {
		b.WriteByte('"')
		for _, c := range s {
			switch {
			case c == '"' || c == '\\' || c < 0x20 || r.IntN(5) == 0:
				if c >= 0x10000 {
					u := utf16.Encode([]rune{c})
					fmt.Fprintf(b, `\u%04x\u%04X`, u[0], u[1])
				} else {
					fmt.Fprintf(b, `\u%04x`, c)
				}
			case c == '/' && r.IntN(2) == 0:
				b.WriteString(`\/`)
			default:
				b.WriteRune(c)
			}
		}
		b.WriteByte('"')
	}
	var gen func(b *strings.Builder, depth int)
	gen = func(b *strings.Builder, depth int) {
		ws(b)
		k := r.IntN(9)
		if depth > 4 && k >= 7 {
			k = r.IntN(7)
		}
		switch k {
		case 0:
			b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
		case 1:
			b.WriteString(strconv.Itoa(r.IntN(2000) - 1000))
		case 2:
			f := r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25))
			b.WriteString(strconv.FormatFloat(f, "eEfg"[r.IntN(4)], -1, 64))
		case 3:
			b.WriteString(strconv.FormatInt(r.Int64(), 10))
		case 4, 5, 6:
			n := r.IntN(6)
			rs := make([]rune, n)
			for i := range rs {
				rs[i] = keyRunes[r.IntN(len(keyRunes))]
			}
			writeStr(b, string(rs))
		case 7:
			b.WriteByte('[')
			for i := range r.IntN(5) {
				if i > 0 {
					b.WriteByte(',')
				}
				gen(b, depth+1)
			}
			ws(b)
			b.WriteByte(']')
		case 8:
			b.WriteByte('{')
			seen := map[string]bool{}
			n := r.IntN(12)
			for i := 0; i < n; i++ {
				rs := make([]rune, r.IntN(4))
				for j := range rs {
					rs[j] = keyRunes[r.IntN(len(keyRunes))]
				}
				key := string(rs)
				if seen[key] {
					continue
				}
				if len(seen) > 0 {
					b.WriteByte(',')
				}
				seen[key] = true
				ws(b)
				writeStr(b, key)
				ws(b)
				b.WriteByte(':')
				gen(b, depth+1)
			}
			ws(b)
			b.WriteByte('}')
		}
		ws(b)
	}
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		gen(&b, 0)
		in := b.String()
		out, err := Transform([]byte(in))
		if err != nil {
			t.Fatalf("Transform(%q): %v", in, err)
		}
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", in, err)
		}
		if ref := refCanonical(v); ref != string(out) {
			t.Fatalf("Transform(%q)\ngot %q\nref %q", in, out, ref)
		}
		if again, err := Transform(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent on %q: %q, %v", out, again, err)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := DecodeStrict([]byte(` {"a":1} `), &v); err != nil || v.A != 1 {
		t.Fatalf("a plain value: %v %+v", err, v)
	}
	for _, in := range []string{`{"a":1,"b":2}`, `{"a":1} {"a":2}`, `{"a":1}x`, `{"a":`, ``} {
		if err := DecodeStrict([]byte(in), &v); err == nil {
			t.Fatalf("accepted %q", in)
		}
	}
}
