package ir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
)

// Encode returns the RFC 8785 canonical JSON of w: the bytes that are
// signed, attested, admitted and digested.
func Encode(w *Worker) ([]byte, error) {
	return canonical.Marshal(w)
}

// Digest returns the workerIrDigest of w, "sha256:<hex>" of Encode(w).
func (w *Worker) Digest() (string, error) {
	b, err := Encode(w)
	if err != nil {
		return "", err
	}
	return DigestBytes(b), nil
}

// DigestBytes returns "sha256:<hex>" of b.
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Decode strictly decodes Worker IR: b must be one JSON object with no
// duplicate member names, no unknown fields and nothing after it. It does
// not require canonical form; use DecodeCanonical for bytes that were
// digested. A refusal is a *blocking.Error with code ir_malformed.
func Decode(b []byte) (*Worker, error) {
	if _, err := canonical.Transform(b); err != nil {
		return nil, blocking.New(blocking.IRMalformed, "%s", blocking.Redact(err.Error(), nil))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w Worker
	if err := dec.Decode(&w); err != nil {
		return nil, blocking.New(blocking.IRMalformed, "%s", describeDecodeError(err))
	}
	return &w, nil
}

// DecodeCanonical is Decode for bytes that must already be canonical, as
// every stored or pushed IR is: re-encoding the decoded value must give b
// back exactly, so the digest of b is the digest of the value.
func DecodeCanonical(b []byte) (*Worker, error) {
	w, err := Decode(b)
	if err != nil {
		return nil, err
	}
	again, err := Encode(w)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, b) {
		return nil, blocking.New(blocking.IRMalformed, "bytes are not the canonical (RFC 8785) encoding of the IR they decode to")
	}
	return w, nil
}

// describeDecodeError names what failed without echoing input values:
// a wrong type is named by the IR's own field path; anything else, such as
// an unknown field's name, is redacted.
func describeDecodeError(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %s has the wrong JSON type (want %s)", e.Field, e.Type)
	default:
		return blocking.Redact(err.Error(), nil) // unknown field names are the input's own
	}
}
