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
	if laterInPlace(path, seqField, v.Seq) {
		return nil
	}
	data, err := signedCopyBytes(v)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// StagedCopy is a signed copy written beside its file, to replace it once
// the version it copies is committed (StageSignedCopy).
type StagedCopy struct {
	name, seqField string
	seq            int64
	staged         *atomicfile.Prepared
}

// StageSignedCopy writes the copy of signed version v beside the file name
// under home, synced, while v's own write is still being committed: Keep
// then only renames it into place. A copy so kept may, after a crash, read
// as the one it replaced (the folder is not synced), which a copy that
// only has to be no later than the database allows.
func StageSignedCopy(home, name, seqField string, v *store.Version) (*StagedCopy, error) {
	data, err := signedCopyBytes(v)
	if err != nil {
		return nil, err
	}
	staged, err := atomicfile.Prepare(filepath.Join(home, name), data, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &StagedCopy{name: name, seqField: seqField, seq: v.Seq, staged: staged}, nil
}

// Keep puts the staged copy in place of the file, unless the file already
// holds a later one (as KeepSignedCopy).
func (c *StagedCopy) Keep(home string) error {
	if laterInPlace(filepath.Join(home, c.name), c.seqField, c.seq) {
		c.staged.Discard()
		return nil
	}
	if err := c.staged.Replace(); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// Discard removes the staged copy, leaving the file as it was.
func (c *StagedCopy) Discard() { c.staged.Discard() }

// signedCopyBytes is the file of a signed copy of v.
func signedCopyBytes(v *store.Version) ([]byte, error) {
	return canonical.Marshal(SignedCopy{Record: v.Record, Signature: v.Signature})
}

// laterInPlace reports whether the signed copy at path already holds the
// version numbered seq or a later one, by its record's field seqField:
// a copy only moves forward.
func laterInPlace(path, seqField string, seq int64) bool {
	held, ok := signedCopySeq(path, seqField)
	return ok && held >= seq
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
