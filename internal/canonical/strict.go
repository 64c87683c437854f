package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// ErrTrailingData is returned by DecodeStrict for input with anything but
// white space after its one JSON value.
var ErrTrailingData = errors.New("canonical: data after the JSON value")

// DecodeStrict decodes the one JSON value in b into out, refusing fields
// out does not have, objects with two members of the same name (at any
// depth, compared after unescaping) and anything but white space after the
// value. b is first parsed by this package's own parser, so it is also held
// to the I-JSON rules [Transform] applies (valid UTF-8, no lone surrogates,
// numbers within binary64, nesting within [MaxDepth]); only then does
// encoding/json decode it, which alone would take the last of two
// duplicate members and stop, content, at a stray '}' or ']' after the
// value. It does not require canonical form: compare Marshal(out) with b
// for that (which also refuses a member name that matches a field of out
// only case-insensitively, as encoding/json allows).
func DecodeStrict(b []byte, out any) error {
	if err := validate(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	// validate has ruled out data after the value; checking what the
	// decoder left unread keeps that true should the two parsers disagree.
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return ErrTrailingData
	}
	return nil
}

// validate parses in as [Transform] does, into pooled scratch space,
// returning a [*SyntaxError] for anything Transform refuses, except that
// data after the value is reported as [ErrTrailingData] (with its offset).
func validate(in []byte) error {
	p := parserPool.Get().(*parser)
	p.in, p.out, p.pos, p.depth = in, p.check[:0], 0, 0
	p.skipWS()
	err := p.value()
	if err == nil {
		p.skipWS()
		if p.pos < len(p.in) {
			err = &trailingError{offset: p.pos}
		}
	}
	p.check = p.out[:0]
	if cap(p.check) > maxRetained {
		p.check = nil
	}
	p.release()
	return err
}

// trailingError is ErrTrailingData at an offset.
type trailingError struct{ offset int }

func (e *trailingError) Error() string {
	return ErrTrailingData.Error() + " at byte " + strconv.Itoa(e.offset)
}

func (e *trailingError) Unwrap() error { return ErrTrailingData }
