package host

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
)

// maxSignedCopy bounds the read of a signed copy already in place.
const maxSignedCopy = 64 << 10

// SignedCopy is the form of a signed copy's file (and of a signed head in
// an audit bundle): the exact signed record and its signature.
type SignedCopy struct {
	Record    []byte `json:"record"`
	Signature []byte `json:"signature"`
}

// KeepSignedCopy writes the signed version v to the file name under home
// — the copy of a signed head kept beside the database, so a database
// removed or replaced by an older copy is caught — unless the file already
// holds a later one, by the number in its record's field seqField. It only
// moves forward: writers finishing out of order leave the later head. The
// file is replaced atomically, mode 0600.
func KeepSignedCopy(home, name, seqField string, v *store.Version) error {
	path := filepath.Join(home, name)
	if seq, ok := signedCopySeq(path, seqField); ok && seq >= v.Seq {
		return nil
	}
	data, err := canonical.Marshal(SignedCopy{Record: v.Record, Signature: v.Signature})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// signedCopySeq reads the number in field seqField of the record in the
// signed copy at path; ok is false when there is no readable copy (the
// copy's signature is checked by its readers, not here).
func signedCopySeq(path, seqField string) (seq int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSignedCopy+1))
	if err != nil || len(b) > maxSignedCopy {
		return 0, false
	}
	var c SignedCopy
	var fields map[string]json.RawMessage
	if canonical.DecodeStrict(b, &c) != nil || json.Unmarshal(c.Record, &fields) != nil || json.Unmarshal(fields[seqField], &seq) != nil {
		return 0, false
	}
	return seq, true
}
