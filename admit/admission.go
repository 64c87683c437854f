package admit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/opencontainers/go-digest"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/host"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// RecordType is the type of an admission record.
const RecordType = "oa.admission/v1"

// RecordTypeRollback is the type of an admission record that goes back to
// a release: an oa.admission/v1 record plus its Rollback. A record carries
// it exactly when it has a Rollback, so plain admissions keep v1's bytes
// and every record signed before rollbacks existed still verifies.
const RecordTypeRollback = "oa.admission/v2"

// MaxRollbackReason is the longest reason a rollback takes, in characters.
const MaxRollbackReason = 500

// RevocationType is the type of a revocation record.
const RevocationType = "oa.revocation/v1"

// Record is a signed admission record.
type Record struct {
	Type           string    `json:"type"`
	Host           string    `json:"host"`
	Package        string    `json:"package"`
	Version        string    `json:"version"`
	Seq            int64     `json:"seq"`
	ArtifactDigest string    `json:"artifactDigest"`
	WorkerIRDigest string    `json:"workerIrDigest"`
	Publisher      KeyRef    `json:"publisher"`
	Authorities    []KeyRef  `json:"authorities"`
	PolicyDigest   string    `json:"policyDigest"`
	Profile        string    `json:"profile"`
	AdmittedBy     string    `json:"admittedBy"`
	OSAccount      string    `json:"osAccount"`
	AdmittedAt     time.Time `json:"admittedAt"`
	ExpiresAt      time.Time `json:"expiresAt"`
	// Warnings are the attestation rules in warn mode that failed, each
	// naming the rule and the failing field; absent when none did.
	Warnings []string `json:"warnings,omitempty"`
	// Rollback is present on a rollback (type oa.admission/v2 only): the
	// release was admitted before and an admission of another release of
	// the package came after, and the person went back on purpose.
	Rollback *Rollback `json:"rollback,omitempty"`
}

// Rollback is what a rollback admission records besides who made it
// (AdmittedBy, OSAccount) and when: why, and the package's newest
// admission it went back from.
type Rollback struct {
	Reason string `json:"reason"`
	// FromSeq and FromArtifactDigest name the package's newest admission
	// when the rollback was made; FromVersion is its version, absent when
	// that record did not verify.
	FromSeq            int64  `json:"fromSeq"`
	FromArtifactDigest string `json:"fromArtifactDigest"`
	FromVersion        string `json:"fromVersion,omitempty"`
}

// KeyRef names a trusted signer by its policy name and key id (for an
// identity, its identity id). For a signer trusted by certificate identity
// it also names the identity the certificate named and the digest of the
// trusted root it chained to; both are absent for a key, so records of
// keys keep their bytes.
type KeyRef struct {
	Name              string                `json:"name"`
	KeyID             string                `json:"keyId"`
	Signer            *signing.CertIdentity `json:"signer,omitempty"`
	TrustedRootDigest string                `json:"trustedRootDigest,omitempty"`
}

// AdmitOptions are the person's choices for one admission.
type AdmitOptions struct {
	Profile    string
	AdmittedBy string
	Now        time.Time
	// DryRun runs every check and writes nothing.
	DryRun bool
	// Rollback asks to admit again a release that an admission of another
	// release of its package came after (refused admission_rollback
	// without it, rollback_unneeded with it when there is no such
	// admission); Reason, required with it and refused without it, is
	// recorded in the signed record.
	Rollback bool
	Reason   string
}

// Admit runs every check on the release rel and, when all pass and it is not a
// dry run, writes a signed admission record with the next sequence number
// of its package. The Decision always lists every check.
//
// Releases of a package are admitted side by side: admitting one leaves
// every other's admission as it was. Admitting again a release that an
// admission of another release of the package came after goes back, and
// is made only with opts.Rollback and a reason, recorded in the record
// (type oa.admission/v2).
func Admit(ctx context.Context, h *host.Host, rel *oci.Release, opts AdmitOptions) (*Decision, *Record, error) {
	if err := host.CheckPerson(opts.AdmittedBy, "the admission"); err != nil {
		return nil, nil, err
	}
	if err := checkReason(opts); err != nil {
		return nil, nil, err
	}
	now := opts.Now.UTC().Truncate(time.Second)
	d, err := Evaluate(ctx, rel, h.Policy, opts.Profile, now)
	if err != nil {
		return nil, nil, err
	}
	if err := d.Err(); err != nil {
		return d, nil, err
	}
	w := d.Artifact.Worker
	// The history is decided on what the store holds, and the record is
	// written only if no admission of the package was written since: one
	// written meanwhile by another process could make this admission a
	// rollback, so the history is decided again.
	for attempt := 1; ; attempt++ {
		rollback, newest, histErr := checkHistory(ctx, h, w.Name, rel.Descriptor.Digest.String(), opts)
		d.Checks = slices.DeleteFunc(d.Checks, func(c Check) bool { return c.Name == CheckHistory })
		if err := d.add(CheckHistory, histErr); err != nil {
			return d, nil, err
		}
		if err := d.Err(); err != nil || opts.DryRun {
			return d, nil, err
		}
		// Decrypt the key before taking the store's write lock, not under
		// it (loaded once, then kept).
		if err := h.PrepareSigner(); err != nil {
			return d, nil, err
		}
		rec := newRecord(h, d, rel.Descriptor.Digest, opts, now)
		if rollback != nil {
			rec.Type, rec.Rollback = RecordTypeRollback, rollback
		}
		_, err = storeOf(h).insertAdmissionAfter(ctx, w.Name, rec.ArtifactDigest, newest, func(seq int64) ([]byte, []byte, error) {
			rec.Seq = seq
			return h.SignRecord(rec)
		})
		switch {
		case errors.Is(err, errAdmittedMeanwhile) && attempt < maxHistoryAttempts:
			continue
		case err != nil:
			return d, nil, err
		}
		return d, rec, nil
	}
}

// maxHistoryAttempts bounds how often Admit decides the history again
// because another admission of the package was written meanwhile.
const maxHistoryAttempts = 5

// newRecord is the admission record of the release d verified (its
// manifest's digest artifact), before its sequence number is known.
func newRecord(h *host.Host, d *Decision, artifact digest.Digest, opts AdmitOptions, now time.Time) *Record {
	w := d.Artifact.Worker
	rec := &Record{
		Type: RecordType, Host: h.Policy.Host, Package: w.Name, Version: w.Version,
		ArtifactDigest: artifact.String(), WorkerIRDigest: d.Artifact.IRDigest,
		Publisher:    KeyRef{Name: d.Publisher, KeyID: d.PublisherKeyID, Signer: d.PublisherSigner, TrustedRootDigest: h.Policy.Publishers[d.Publisher].TrustedRootDigest},
		PolicyDigest: h.Policy.Digest(), Profile: d.Profile, AdmittedBy: opts.AdmittedBy, OSAccount: host.OSAccount(),
		AdmittedAt: now, ExpiresAt: now.Add(d.Lifetime), Warnings: d.Warnings,
	}
	for _, name := range d.Authorities {
		a := h.Policy.Authorities[name]
		rec.Authorities = append(rec.Authorities, KeyRef{Name: name, KeyID: a.Verifier().KeyID(), Signer: d.AuthoritySigners[name], TrustedRootDigest: a.TrustedRootDigest})
	}
	return rec
}

// checkReason refuses a rollback without a usable reason, and a reason
// without a rollback, before anything is read.
func checkReason(opts AdmitOptions) error {
	if !opts.Rollback {
		if opts.Reason != "" {
			return blocking.New(blocking.RollbackReasonInvalid, "a reason is recorded only with a rollback")
		}
		return nil
	}
	switch r := opts.Reason; {
	case strings.TrimSpace(r) == "":
		return blocking.New(blocking.RollbackReasonInvalid, "a rollback needs a reason")
	case !utf8.ValidString(r) || utf8.RuneCountInString(r) > MaxRollbackReason:
		return blocking.New(blocking.RollbackReasonInvalid, "the reason is not text of at most %d characters", MaxRollbackReason)
	case strings.ContainsFunc(r, unicode.IsControl):
		return blocking.New(blocking.RollbackReasonInvalid, "the reason holds a control character (one line, no tabs)")
	}
	return nil
}

// checkHistory refuses a revoked digest, and decides whether admitting
// the release goes back: it does when the release was admitted before and
// an admission of another release of the package came after its last one.
// Going back is refused admission_rollback unless opts asks for a
// rollback, which is refused rollback_unneeded when it does not go back.
// On a rollback it returns what the record keeps of it; newest is the
// sequence number of the package's newest admission it decided on (0 for
// none).
func checkHistory(ctx context.Context, h *host.Host, pkg, digest string, opts AdmitOptions) (rb *Rollback, newest int64, err error) {
	revs, err := storeOf(h).Revocations(ctx, digest)
	if err != nil {
		return nil, 0, err
	}
	if len(revs) > 0 {
		return nil, 0, blocking.New(blocking.ReleaseRevoked, "this digest was revoked")
	}
	all, err := storeOf(h).Admissions(ctx, pkg)
	if err != nil {
		return nil, 0, err
	}
	if len(all) > 0 {
		newest = all[len(all)-1].Seq
	}
	mine := slices.IndexFunc(all, func(a AdmissionRow) bool { return a.ArtifactDigest == digest })
	if mine < 0 || all[len(all)-1].ArtifactDigest == digest {
		if opts.Rollback {
			return nil, newest, blocking.New(blocking.RollbackUnneeded, "no admission of another release of %s came after this release's", pkg)
		}
		return nil, newest, nil
	}
	last := all[len(all)-1]
	from := &Rollback{Reason: opts.Reason, FromSeq: last.Seq, FromArtifactDigest: last.ArtifactDigest}
	if rec, err := readRecord(h, last); err == nil {
		from.FromVersion = rec.Version
	}
	if !opts.Rollback {
		version := ""
		if from.FromVersion != "" {
			version = " (version " + from.FromVersion + ")"
		}
		return nil, newest, blocking.New(blocking.AdmissionRollback, "admission #%d%s of another release came after this release's; going back is made only with --rollback and a reason", last.Seq, version)
	}
	return from, newest, nil
}

// State is whether a release is actively admitted.
type State string

// States. Anything but Active means not actively admitted.
const (
	Active       State = "active"
	Missing      State = "missing"
	Expired      State = "expired"
	Revoked      State = "revoked"
	Mismatched   State = "mismatched"
	Unverifiable State = "unverifiable"
)

// Status is the answer of StatusOf.
type Status struct {
	State  State   `json:"state"`
	Record *Record `json:"record,omitempty"`
	// RecordDigest is the digest of the active record's signed bytes, the
	// admission link of every plan resolved from it.
	RecordDigest string `json:"recordDigest,omitempty"`
	// Why names the refusal when State is not Active.
	Why *blocking.Error `json:"why,omitempty"`
}

// RequireActive is StatusOf for a caller that may go on only with an
// actively admitted release: the status when it is active, else the
// refusal that says why (admission_missing when none is named).
func RequireActive(ctx context.Context, h *host.Host, artifactDigest string, now time.Time) (*Status, error) {
	st, err := StatusOf(ctx, h, artifactDigest, now)
	if err != nil {
		return nil, err
	}
	if st.State == Active {
		return st, nil
	}
	if st.Why == nil {
		return nil, blocking.New(blocking.AdmissionMissing, "not actively admitted")
	}
	return nil, st.Why
}

// StatusOf answers whether the exact release artifactDigest is actively
// admitted at now, and if not exactly why. Every record is verified with
// the host key on read. Releases of a package are admitted side by side:
// a release is active by its own latest admission, whatever was admitted
// of the package since; an older admission of the release is never
// restored when its latest is unverifiable, expired or mismatched.
func StatusOf(ctx context.Context, h *host.Host, artifactDigest string, now time.Time) (*Status, error) {
	// A revocation removed behind the host's back would read as none: the
	// revocations must be the ones the host signed before any is believed
	// absent.
	if err := CheckRevocations(ctx, h); err != nil {
		var why *blocking.Error
		if !errors.As(err, &why) {
			return nil, err
		}
		return &Status{State: Unverifiable, Why: why}, nil
	}
	revs, err := storeOf(h).Revocations(ctx, artifactDigest)
	if err != nil {
		return nil, err
	}
	for _, r := range revs {
		if h.VerifyRecord(r.Record, r.Signature) == nil {
			return &Status{State: Revoked, Why: blocking.New(blocking.ReleaseRevoked, "revoked")}, nil
		}
	}
	mine, err := storeOf(h).AdmissionsOf(ctx, artifactDigest)
	if err != nil {
		return nil, err
	}
	if len(mine) == 0 {
		return &Status{State: Missing, Why: blocking.New(blocking.AdmissionMissing, "no admission for this digest")}, nil
	}
	row := mine[len(mine)-1]
	rec, err := readRecord(h, row)
	if err != nil {
		return &Status{State: Unverifiable, Why: blocking.New(blocking.AdmissionUnverified, "record %s #%d", row.Package, row.Seq)}, nil
	}
	switch {
	case rec.ArtifactDigest != artifactDigest || rec.PolicyDigest != h.Policy.Digest():
		return &Status{State: Mismatched, Record: rec, Why: blocking.New(blocking.AdmissionMismatched, "the record is for another digest or policy")}, nil
	case !now.Before(rec.ExpiresAt):
		return &Status{State: Expired, Record: rec, Why: blocking.New(blocking.AdmissionExpired, "expired at %s", rec.ExpiresAt.Format(time.RFC3339))}, nil
	}
	return &Status{State: Active, Record: rec, RecordDigest: ir.DigestBytes(row.Record)}, nil
}

// readRecord verifies a stored admission and decodes it strictly; the row's
// own columns must agree with what was signed.
func readRecord(h *host.Host, row AdmissionRow) (*Record, error) {
	if err := h.VerifyRecord(row.Record, row.Signature); err != nil {
		return nil, err
	}
	var rec Record
	if err := canonical.DecodeStrict(row.Record, &rec); err != nil || !knownType(&rec) || rec.Seq != row.Seq || rec.Package != row.Package || rec.ArtifactDigest != row.ArtifactDigest {
		return nil, errors.New("record does not match its row")
	}
	return &rec, nil
}

// knownType reports whether the record's type is one this program reads,
// with the fields of that type: a rollback exactly in oa.admission/v2,
// with a reason.
func knownType(rec *Record) bool {
	switch rec.Type {
	case RecordType:
		return rec.Rollback == nil
	case RecordTypeRollback:
		return rec.Rollback != nil && rec.Rollback.Reason != ""
	}
	return false
}

// Admissions returns every admission of pkg ("" for all) with each
// record's verification: an edited row reads as unverifiable.
func Admissions(ctx context.Context, h *host.Host, pkg string) ([]Listed, error) {
	rows, err := storeOf(h).Admissions(ctx, pkg)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(rows))
	for i, row := range rows {
		out[i] = Listed{Package: row.Package, Seq: row.Seq, ArtifactDigest: row.ArtifactDigest}
		if rec, err := readRecord(h, row); err == nil {
			out[i].Record, out[i].Verified = rec, true
		}
	}
	return out, nil
}

// Listed is one admission as listed.
type Listed struct {
	Package        string  `json:"package"`
	Seq            int64   `json:"seq"`
	ArtifactDigest string  `json:"artifactDigest"`
	Verified       bool    `json:"verified"`
	Record         *Record `json:"record,omitempty"`
}

// Revocation is a signed revocation record.
type Revocation struct {
	Type           string    `json:"type"`
	Host           string    `json:"host"`
	ArtifactDigest string    `json:"artifactDigest"`
	Reason         string    `json:"reason"`
	RevokedBy      string    `json:"revokedBy"`
	OSAccount      string    `json:"osAccount"`
	RevokedAt      time.Time `json:"revokedAt"`
}

// Revoke writes a signed, permanent revocation of artifactDigest.
func Revoke(ctx context.Context, h *host.Host, artifactDigest, reason, by string, now time.Time) (*Revocation, error) {
	if err := host.CheckPerson(by, "the revocation"); err != nil {
		return nil, err
	}
	rev := &Revocation{Type: RevocationType, Host: h.Policy.Host, ArtifactDigest: artifactDigest, Reason: reason, RevokedBy: by, OSAccount: host.OSAccount(), RevokedAt: now.UTC().Truncate(time.Second)}
	b, sig, err := h.SignRecord(rev) // decrypts the host key, outside the write lock
	if err != nil {
		return nil, err
	}
	return rev, insertRevocation(ctx, h, artifactDigest, b, sig, now)
}

// HasRevocation reports whether any revocation of artifactDigest is stored,
// verified or not: fleet provisioning treats a stored revocation as final
// before it asks StatusOf.
func HasRevocation(ctx context.Context, h *host.Host, artifactDigest string) (bool, error) {
	revs, err := storeOf(h).Revocations(ctx, artifactDigest)
	return len(revs) > 0, err
}
