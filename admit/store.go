package admit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/store"
)

// admissions is admit's typed store over the host database: it owns the
// admission_sequences, admissions and revocations tables (their schema is
// internal/store's migration 1, kept there so existing databases open
// unchanged). Like the rest of the store it neither signs nor verifies:
// the functions of admit check every record they read.
type admissions struct{ db *store.DB }

// storeOf is admit's store of host h.
func storeOf(h *host.Host) admissions { return admissions{h.Store()} }

// InsertAdmission appends an admission for package pkg and returns its
// sequence number.
//
// In one write transaction it allocates the next sequence number for pkg (1
// for its first admission, then 2, 3…; never reused, and increasing across
// every process sharing the database), calls build with it to produce the
// signed record and its signature (so the number can be part of what is
// signed), and inserts the row. If build returns an error, or anything else
// fails, nothing is written and the sequence number is not consumed. build
// runs while the write lock is held, so it should be quick and must not use
// the database itself.
func (s admissions) InsertAdmission(ctx context.Context, pkg, artifactDigest string, build func(seq int64) (record, signature []byte, err error)) (int64, error) {
	return s.insertAdmissionAfter(ctx, pkg, artifactDigest, -1, build)
}

// errAdmittedMeanwhile is insertAdmissionAfter's answer when the package's
// newest admission is not the one the caller decided on.
var errAdmittedMeanwhile = errors.New("store: insert admission: another admission of the package was written meanwhile")

// insertAdmissionAfter is InsertAdmission, writing only while the
// package's newest admission is still number after (0 for none; -1 for
// any): otherwise it writes nothing and returns errAdmittedMeanwhile.
func (s admissions) insertAdmissionAfter(ctx context.Context, pkg, artifactDigest string, after int64, build func(seq int64) (record, signature []byte, err error)) (int64, error) {
	if pkg == "" {
		return 0, errors.New("store: insert admission: empty package name")
	}
	if artifactDigest == "" {
		return 0, errors.New("store: insert admission: empty artifact digest")
	}
	var seq int64
	err := s.db.Write(ctx, "insert admission "+pkg, func(tx *sql.Tx) error {
		if after >= 0 {
			var newest int64
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM admissions WHERE package = ?`, pkg).Scan(&newest); err != nil {
				return fmt.Errorf("store: insert admission: read the newest: %w", err)
			}
			if newest != after {
				return errAdmittedMeanwhile
			}
		}
		err := tx.QueryRowContext(ctx, `
INSERT INTO admission_sequences (package, last_seq) VALUES (?, 1)
ON CONFLICT (package) DO UPDATE SET last_seq = last_seq + 1
RETURNING last_seq`, pkg).Scan(&seq)
		if err != nil {
			return fmt.Errorf("store: insert admission: allocate sequence number: %w", err)
		}
		record, signature, err := build(seq)
		if err != nil {
			return fmt.Errorf("store: insert admission %s #%d: %w", pkg, seq, err)
		}
		if err := store.CheckRecord(record, signature); err != nil {
			return fmt.Errorf("store: insert admission %s #%d: %w", pkg, seq, err)
		}
		_, err = tx.ExecContext(ctx, `
INSERT INTO admissions (package, seq, artifact_digest, record, signature)
VALUES (?, ?, ?, ?, ?)`, pkg, seq, artifactDigest, record, signature)
		if err != nil {
			return fmt.Errorf("store: insert admission %s #%d: %w", pkg, seq, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// Admissions returns the admissions of package pkg by ascending sequence
// number. If pkg is "", it returns the admissions of every package, ordered
// by package name and then sequence number.
func (s admissions) Admissions(ctx context.Context, pkg string) ([]AdmissionRow, error) {
	if pkg == "" {
		return s.queryAdmissions(ctx, `SELECT `+admissionColumns+` FROM admissions ORDER BY package, seq`)
	}
	return s.queryAdmissions(ctx, `SELECT `+admissionColumns+` FROM admissions WHERE package = ? ORDER BY seq`, pkg)
}

// LatestAdmission returns the admission of package pkg with the highest
// sequence number. It reports false if pkg has none.
func (s admissions) LatestAdmission(ctx context.Context, pkg string) (AdmissionRow, bool, error) {
	as, err := s.queryAdmissions(ctx, `SELECT `+admissionColumns+` FROM admissions WHERE package = ? ORDER BY seq DESC LIMIT 1`, pkg)
	if err != nil || len(as) == 0 {
		return AdmissionRow{}, false, err
	}
	return as[0], true, nil
}

// AdmissionsOf returns the admissions of the artifact with the given digest,
// ordered by package name and then sequence number.
func (s admissions) AdmissionsOf(ctx context.Context, artifactDigest string) ([]AdmissionRow, error) {
	return s.queryAdmissions(ctx, `SELECT `+admissionColumns+` FROM admissions WHERE artifact_digest = ? ORDER BY package, seq`, artifactDigest)
}

func (s admissions) queryAdmissions(ctx context.Context, query string, args ...any) ([]AdmissionRow, error) {
	as, err := store.Select(ctx, s.db, scanAdmission, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read admissions: %w", err)
	}
	return as, nil
}

// InsertRevocation appends a revocation row of the artifact with the
// given digest, alone: Revoke writes it with its signed head instead
// (revocations.go). Revocations are permanent: there is no way to remove
// or change one.
func (s admissions) InsertRevocation(ctx context.Context, artifactDigest string, record, signature []byte) error {
	if artifactDigest == "" {
		return errors.New("store: insert revocation: empty artifact digest")
	}
	if err := store.CheckRecord(record, signature); err != nil {
		return fmt.Errorf("store: insert revocation of %s: %w", artifactDigest, err)
	}
	_, err := s.db.ExecContext(ctx, `
INSERT INTO revocations (artifact_digest, record, signature) VALUES (?, ?, ?)`,
		artifactDigest, record, signature)
	if err != nil {
		return fmt.Errorf("store: insert revocation of %s: %w", artifactDigest, err)
	}
	return nil
}

// InsertRevocationWithHead appends a revocation row and, in the same
// write transaction, the version head returns: head gets every
// revocation (the new one last) and the current head version (nil for
// none), runs under the write lock and must not use the database.
func (s admissions) InsertRevocationWithHead(ctx context.Context, artifactDigest string, record, signature []byte, head func(rows []RevocationRow, prev *store.Version) (store.Version, error)) error {
	return s.db.Write(ctx, "insert revocation", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO revocations (artifact_digest, record, signature) VALUES (?, ?, ?)`, artifactDigest, record, signature); err != nil {
			return fmt.Errorf("store: insert revocation of %s: %w", artifactDigest, err)
		}
		rows, err := store.Select(ctx, tx, scanRevocation, `SELECT `+revocationColumns+` FROM revocations ORDER BY seq`)
		if err != nil {
			return fmt.Errorf("store: read revocations: %w", err)
		}
		prev, err := store.LatestVersionTx(ctx, tx, RevocationHeadKind, RevocationHeadKey)
		if err != nil {
			return err
		}
		v, err := head(rows, prev)
		if err != nil {
			return err
		}
		return store.InsertVersionTx(ctx, tx, v)
	})
}

// Revocations returns the revocations of the artifact with the given digest
// by ascending Seq. If artifactDigest is "", it returns every revocation.
func (s admissions) Revocations(ctx context.Context, artifactDigest string) ([]RevocationRow, error) {
	query, args := `SELECT `+revocationColumns+` FROM revocations ORDER BY seq`, []any(nil)
	if artifactDigest != "" {
		query, args = `SELECT `+revocationColumns+` FROM revocations WHERE artifact_digest = ? ORDER BY seq`, []any{artifactDigest}
	}
	rs, err := store.Select(ctx, s.db, scanRevocation, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read revocations: %w", err)
	}
	return rs, nil
}
