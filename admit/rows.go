package admit

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/oa-dev/oa/internal/store"
)

// The rows of the tables admit owns, as its typed store reads and writes
// them and an audit bundle carries them byte for byte (the bundle encodes
// these structs as they are: their field names and order are the
// bundle's format).

// AdmissionRow is one stored admission record (the admissions table).
type AdmissionRow struct {
	// Seq is the record's sequence number among the admissions of Package,
	// starting at 1.
	Seq int64
	// Package is the package name the admission belongs to.
	Package string
	// ArtifactDigest is the digest of the admitted artifact.
	ArtifactDigest string
	// Record is the signed record, byte for byte as it was inserted.
	Record []byte
	// Signature is the signature over Record, byte for byte as it was
	// inserted.
	Signature []byte
}

// RevocationRow is one stored revocation record (the revocations table).
type RevocationRow struct {
	// ArtifactDigest is the digest of the revoked artifact.
	ArtifactDigest string
	// Record is the signed record, byte for byte as it was inserted.
	Record []byte
	// Signature is the signature over Record, byte for byte as it was
	// inserted.
	Signature []byte
	// Seq is assigned by the store: it increases with every revocation
	// inserted, whatever its digest, and is never reused.
	Seq int64
}

// The columns of each row type, in the order its scan reads them: every
// read of the table selects the same columns and reads them with the
// same function.
const (
	admissionColumns  = `seq, package, artifact_digest, record, signature`
	revocationColumns = `seq, artifact_digest, record, signature`
)

// scanAdmission scans one row of admissionColumns.
func scanAdmission(r store.Row, a *AdmissionRow) error {
	return r.Scan(&a.Seq, &a.Package, &a.ArtifactDigest, &a.Record, &a.Signature)
}

// scanRevocation scans one row of revocationColumns.
func scanRevocation(r store.Row, v *RevocationRow) error {
	return r.Scan(&v.Seq, &v.ArtifactDigest, &v.Record, &v.Signature)
}

// RowsIn is every admission (by package, then sequence number) and every
// revocation (by sequence number) as tx sees them: how an audit bundle
// copies admit's tables inside the one read transaction it copies every
// table in.
func RowsIn(ctx context.Context, tx *sql.Tx) ([]AdmissionRow, []RevocationRow, error) {
	as, err := store.DumpTable(ctx, tx, scanAdmission, `SELECT `+admissionColumns+` FROM admissions ORDER BY package, seq`)
	if err != nil {
		return nil, nil, err
	}
	rs, err := store.DumpTable(ctx, tx, scanRevocation, `SELECT `+revocationColumns+` FROM revocations ORDER BY seq`)
	if err != nil {
		return nil, nil, err
	}
	return as, rs, nil
}

// RestoreIn writes admissions and revocations, every row as it is, into
// admit's empty tables in tx, with each package's sequence where its
// last admission left it: an audit bundle's copy rebuilt (nothing is
// judged here: admit's functions check every record they read). It
// refuses tables that hold any row.
func RestoreIn(ctx context.Context, tx *sql.Tx, admissions []AdmissionRow, revocations []RevocationRow) error {
	if err := store.RequireEmpty(ctx, tx, "admissions", "revocations"); err != nil {
		return err
	}
	last := map[string]int64{}
	for _, a := range admissions {
		if a.Seq > last[a.Package] {
			last[a.Package] = a.Seq
		}
	}
	for pkg, seq := range last {
		if _, err := tx.ExecContext(ctx, `INSERT INTO admission_sequences (package, last_seq) VALUES (?, ?)`, pkg, seq); err != nil {
			return fmt.Errorf("store: restore: %w", err)
		}
	}
	err := store.InsertEach(ctx, tx, `INSERT INTO admissions (package, seq, artifact_digest, record, signature) VALUES (?, ?, ?, ?, ?)`, store.EachOf(admissions), func(a *AdmissionRow) ([]any, string) {
		return []any{a.Package, a.Seq, a.ArtifactDigest, a.Record, a.Signature}, fmt.Sprintf("admission %s #%d", a.Package, a.Seq)
	})
	if err != nil {
		return err
	}
	return store.InsertEach(ctx, tx, `INSERT INTO revocations (seq, artifact_digest, record, signature) VALUES (?, ?, ?, ?)`, store.EachOf(revocations), func(r *RevocationRow) ([]any, string) {
		return []any{r.Seq, r.ArtifactDigest, r.Record, r.Signature}, fmt.Sprintf("revocation #%d", r.Seq)
	})
}
