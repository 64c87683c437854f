package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestDecodeStrictRefusesTrailingAndDuplicates is the contract install,
// admission and fleet records rely on: one value, no duplicate member at
// any depth, nothing after it.
func TestDecodeStrictRefusesTrailingAndDuplicates(t *testing.T) {
	type inner struct {
		B int `json:"b"`
	}
	type doc struct {
		A int     `json:"a"`
		N inner   `json:"n"`
		L []inner `json:"l"`
	}
	for _, tc := range []struct {
		in       string
		trailing bool
	}{
		{`{"a":1}}`, true},
		{`{"a":1}]`, true},
		{`{"a":1} }`, true},
		{"{\"a\":1}\n]", true},
		{`{"a":1}{}`, true},
		{`{"a":1}null`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":1,"\u0061":2}`, false},
		{`{"n":{"b":1,"b":2}}`, false},
		{`{"l":[{"b":1},{"b":2,"b":3}]}`, false},
		{`{"n":{"b":1},"n":{"b":2}}`, false},
	} {
		var v doc
		err := DecodeStrict([]byte(tc.in), &v)
		if err == nil {
			t.Errorf("DecodeStrict(%s) accepted it as %+v", tc.in, v)
			continue
		}
		if got := errors.Is(err, ErrTrailingData); got != tc.trailing {
			t.Errorf("DecodeStrict(%s) = %v; errors.Is(ErrTrailingData) = %v, want %v", tc.in, err, got, tc.trailing)
		}
		if !tc.trailing && !strings.Contains(err.Error(), "duplicate") {
			t.Errorf("DecodeStrict(%s) = %v; want a duplicate-member refusal", tc.in, err)
		}
	}
	var v doc
	if err := DecodeStrict([]byte(" {\"a\":1,\"n\":{\"b\":2},\"l\":[{\"b\":3},{\"b\":3}]}\r\n\t "), &v); err != nil || v.A != 1 || v.N.B != 2 || len(v.L) != 2 {
		t.Fatalf("a plain value with equal members in different objects: %v %+v", err, v)
	}
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a":1}}`, `{"a":1}]`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`,
		`[{"a":1},{"a":1,"a":1}]`, `{"a":1,"\u0061":2}`, ` [1,2] `, `"x" "y"`, `{}`, `[]]`, `1 2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		err := DecodeStrict(b, &v)
		single, why := oneValueNoDuplicates(b)
		if err == nil && !single {
			t.Fatalf("DecodeStrict accepted %q, which %s", b, why)
		}
		if err != nil && single && json.Valid(b) {
			var se *SyntaxError
			if !errors.As(err, &se) || !isSemanticRefusal(se.Msg) {
				t.Fatalf("DecodeStrict refused %q, one JSON value with no duplicate: %v", b, err)
			}
		}
	})
}

func isSemanticRefusal(msg string) bool {
	for _, s := range semanticRefusals {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// oneValueNoDuplicates is the property checked independently of this
// package's parser, by encoding/json's token stream: b holds exactly one
// JSON value, no object in it has two members of the same name (compared
// after unescaping), and nothing but white space follows it. It returns
// why not when it does not hold.
func oneValueNoDuplicates(b []byte) (bool, string) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	// One set of names per open object; nil for an open array.
	var open []map[string]bool
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false, "is not one JSON value: " + err.Error()
		}
		if expectKey {
			name := tok.(string) // Token yields only strings in key position
			if open[len(open)-1][name] {
				return false, "has a duplicate member"
			}
			open[len(open)-1][name] = true
			expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			open = append(open, map[string]bool{})
		case json.Delim('['):
			open = append(open, nil)
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
		}
		if len(open) == 0 {
			break // the one top-level value is complete
		}
		// After a value (or an opening brace) inside an object comes a
		// key, unless the object closes.
		expectKey = open[len(open)-1] != nil && dec.More()
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, "has more after the value"
	}
	return true, ""
}

// BenchmarkDecodeStrict decodes a record-sized document (about 4 KiB, the
// size of an admission or install record) and the 1 MiB plan strictly.
func BenchmarkDecodeStrict(b *testing.B) {
	_, big := benchData()
	small, err := json.Marshal(makeBenchPlan(4 << 10))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"4KiB", small}, {"1MiB", big}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.in)))
			b.ReportAllocs()
			for b.Loop() {
				var p benchPlan
				if err := DecodeStrict(tc.in, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
