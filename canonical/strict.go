package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrTrailingData is returned by DecodeStrict for input with anything but
// white space after its one JSON value.
var ErrTrailingData = errors.New("canonical: data after the JSON value")

// DecodeStrict decodes the one JSON value in b into out, refusing fields
// out does not have and anything after the value. It does not require
// canonical form: compare Marshal(out) with b for that.
func DecodeStrict(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return ErrTrailingData
	}
	return nil
}
