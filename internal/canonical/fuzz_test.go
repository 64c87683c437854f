package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// semanticRefusals are the reasons Transform may refuse text that
// encoding/json.Valid accepts.
var semanticRefusals = []string{"invalid UTF-8", "surrogate", "duplicate object member name", "out of range", "nesting deeper"}

func FuzzTransform(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2,{"d":null,"c":true}],"a":"x"}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001,-0,1e21,1e-7]`,
		`"\u0000\u001f\b\f\n\r\t\"\\\/\u2028<>&\u007f"`,
		`{"a":1,"a":2}`,
		`"\ud800"`,
		"\"\xed\xa0\x80\"",
		`1e400`,
		` [ ] `,
		`[[[[{"":{"":[]}}]]]]`,
		"{\"\ue000\":1,\"\U00010000\":2}",
		`12345678901234567890`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Transform(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *SyntaxError: %v", err, err)
			}
			if se.Offset < 0 || se.Offset > int64(len(in)) {
				t.Fatalf("offset %d outside input of %d bytes", se.Offset, len(in))
			}
			if json.Valid(in) && !slices.ContainsFunc(semanticRefusals, func(s string) bool {
				return strings.Contains(se.Msg, s)
			}) {
				t.Fatalf("refused valid JSON %q: %v", in, err)
			}
			if IsCanonical(in) {
				t.Fatalf("IsCanonical accepted refused input")
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q as %q", in, out)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("invalid output %q for %q", out, in)
		}
		again, err := Transform(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
		if !IsCanonical(out) {
			t.Fatalf("IsCanonical(%q) = false", out)
		}
		if IsCanonical(in) != bytes.Equal(in, out) {
			t.Fatalf("IsCanonical(%q) = %v but output is %q", in, !bytes.Equal(in, out), out)
		}
		var vin, vout any
		if err := json.Unmarshal(in, &vin); err != nil {
			t.Fatalf("json.Unmarshal(in): %v", err)
		}
		if err := json.Unmarshal(out, &vout); err != nil {
			t.Fatalf("json.Unmarshal(out): %v", err)
		}
		if !reflect.DeepEqual(vin, vout) {
			t.Fatalf("values differ:\nin  %q -> %#v\nout %q -> %#v", in, vin, out, vout)
		}
		// Differential check against a simple tree-based canonicalizer.
		if ref := refCanonical(vin); ref != string(out) {
			t.Fatalf("output differs from reference for %q:\ngot %q\nref %q", in, out, ref)
		}
		// And against an independent implementation (the RFC 8785 author's,
		// which formats numbers by its own code): wherever it accepts the
		// input, the bytes must agree.
		if ref, err := jsoncanonicalizer.Transform(in); err == nil && !bytes.Equal(ref, out) {
			t.Fatalf("output differs from cyberphone's for %q:\ngot %q\nref %q", in, out, ref)
		}
	})
}

// refCanonical is a slow, straightforward JCS serializer of the values
// produced by encoding/json.Unmarshal into any.
func refCanonical(v any) string {
	var b strings.Builder
	refWrite(&b, v)
	return b.String()
}

func refWrite(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, v)
	case float64:
		b.Write(appendFloat(nil, v))
	case string:
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			refWrite(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y string) int {
			return slices.Compare(utf16.Encode([]rune(x)), utf16.Encode([]rune(y)))
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			refWrite(b, k)
			b.WriteByte(':')
			refWrite(b, v[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}
