package admit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/ir"
	"github.com/oa-dev/oa/signing"
)

// Files of a host under $OA_HOME.
const (
	PolicyFile  = "policy.cue"
	HostKeyFile = "keys/host.key"
	HostPubFile = "keys/host.pub"
	StateFile   = "state.db"
)

// RecordType is the type of an admission record.
const RecordType = "oa.admission/v1"

// RevocationType is the type of a revocation record.
const RevocationType = "oa.revocation/v1"

// Host is one host's admission authority: its policy, its admission key
// and its store.
type Host struct {
	Home   string
	Policy *Policy
	// verifier checks every record read; signer, decrypted only when a
	// record is written (scrypt makes that cost about 0.1 s), signs them.
	verifier *signing.Verifier
	signer   *signing.Signer
	db       *store.DB
	// verified remembers signatures already checked (see verify).
	verified sync.Map
}

// OpenHost opens the host under home: its policy, its host public key and
// its SQLite store. The host private key (cosign's format, no password,
// 0600, the way hosts keep their own keys) is read when a record is signed.
func OpenHost(ctx context.Context, home string) (*Host, error) {
	if err := CheckHome(home); err != nil {
		return nil, err
	}
	pubPEM, err := os.ReadFile(filepath.Join(home, HostPubFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, blocking.New(blocking.HostNotInitialized, "no host key")
	}
	if err != nil {
		return nil, fmt.Errorf("reading host key: %w", err)
	}
	if _, err := os.Stat(filepath.Join(home, PolicyFile)); errors.Is(err, os.ErrNotExist) {
		return nil, blocking.New(blocking.HostNotInitialized, "no host policy")
	}
	policy, err := LoadPolicy(filepath.Join(home, PolicyFile))
	if err != nil {
		return nil, err
	}
	verifier, err := signing.LoadVerifier(pubPEM)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, filepath.Join(home, StateFile))
	if err != nil {
		return nil, err
	}
	return &Host{Home: home, Policy: policy, verifier: verifier, db: db}, nil
}

// loadSigner decrypts the host private key once, and checks it is the
// key of the host public key records are verified with.
func (h *Host) loadSigner() (*signing.Signer, error) {
	if h.signer != nil {
		return h.signer, nil
	}
	keyPEM, err := os.ReadFile(filepath.Join(h.Home, HostKeyFile))
	if err != nil {
		return nil, blocking.New(blocking.HostNotInitialized, "the host private key cannot be read")
	}
	s, err := signing.LoadSigner(keyPEM, nil)
	if err != nil {
		return nil, err
	}
	if s.KeyID() != h.verifier.KeyID() {
		return nil, blocking.New(blocking.HostNotInitialized, "the host key pair does not match")
	}
	h.signer = s
	return s, nil
}

// KeyID is the id of the host key that signs and verifies host records.
func (h *Host) KeyID() string { return h.verifier.KeyID() }

// PrepareSigner decrypts the host key now, so that signing under a store
// write lock later is quick.
func (h *Host) PrepareSigner() error {
	_, err := h.loadSigner()
	return err
}

// Close closes the host's store.
func (h *Host) Close() error { return h.db.Close() }

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
}

// KeyRef names a trusted key by its policy name and key id.
type KeyRef struct {
	Name  string `json:"name"`
	KeyID string `json:"keyId"`
}

// AdmitOptions are the person's choices for one admission.
type AdmitOptions struct {
	Profile    string
	AdmittedBy string
	Now        time.Time
	// DryRun runs every check and writes nothing.
	DryRun bool
}

// Admit runs every check on the release and, when all pass and it is not a
// dry run, writes a signed admission record with the next sequence number
// of its package. The Decision always lists every check.
func (h *Host) Admit(ctx context.Context, target oras.ReadOnlyTarget, desc ocispec.Descriptor, opts AdmitOptions) (*Decision, *Record, error) {
	if strings.TrimSpace(opts.AdmittedBy) == "" {
		return nil, nil, blocking.New(blocking.AdmitterMissing, "--as is required")
	}
	now := opts.Now.UTC().Truncate(time.Second)
	d, err := Evaluate(ctx, target, desc, h.Policy, opts.Profile, now)
	if err != nil {
		return nil, nil, err
	}
	if err := d.Err(); err != nil {
		return d, nil, err
	}
	w := d.Artifact.Worker
	if err := d.add(CheckHistory, h.refuseRevokedOrRollback(ctx, w.Name, desc.Digest.String())); err != nil {
		return d, nil, err
	}
	if err := d.Err(); err != nil || opts.DryRun {
		return d, nil, err
	}
	rec := &Record{
		Type: RecordType, Host: h.Policy.Host, Package: w.Name, Version: w.Version,
		ArtifactDigest: desc.Digest.String(), WorkerIRDigest: d.Artifact.IRDigest,
		Publisher: KeyRef{d.Publisher, d.PublisherKeyID}, PolicyDigest: h.Policy.Digest(),
		Profile: d.Profile, AdmittedBy: opts.AdmittedBy, OSAccount: OSAccount(),
		AdmittedAt: now, ExpiresAt: now.Add(d.Lifetime),
	}
	for _, name := range d.Authorities {
		rec.Authorities = append(rec.Authorities, KeyRef{name, h.Policy.Authorities[name].Verifier().KeyID()})
	}
	// Decrypt the key before taking the store's write lock, not under it.
	if _, err := h.loadSigner(); err != nil {
		return d, nil, err
	}
	_, err = h.db.InsertAdmission(ctx, w.Name, rec.ArtifactDigest, func(seq int64) ([]byte, []byte, error) {
		rec.Seq = seq
		return h.sign(rec)
	})
	if err != nil {
		return d, nil, err
	}
	return d, rec, nil
}

// refuseRevokedOrRollback refuses a revoked digest, and a release that an
// admission of another release of the package has already replaced.
func (h *Host) refuseRevokedOrRollback(ctx context.Context, pkg, digest string) error {
	revs, err := h.db.Revocations(ctx, digest)
	if err != nil {
		return err
	}
	if len(revs) > 0 {
		return blocking.New(blocking.ReleaseRevoked, "this digest was revoked")
	}
	all, err := h.db.Admissions(ctx, pkg)
	if err != nil {
		return err
	}
	mine := slices.IndexFunc(all, func(a store.Admission) bool { return a.ArtifactDigest == digest })
	if mine >= 0 && all[len(all)-1].ArtifactDigest != digest {
		return blocking.New(blocking.AdmissionRollback, "admission #%d of another release came after this release's", all[len(all)-1].Seq)
	}
	return nil
}

// SignRecord encodes v as canonical JSON and signs those bytes with the
// host key. Later stages (connections, bindings, receipts) keep their
// host-signed records this way, so one key vouches for all host state.
func (h *Host) SignRecord(v any) (record, signature []byte, err error) { return h.sign(v) }

// VerifyRecord checks signature over record with the host key.
func (h *Host) VerifyRecord(record, signature []byte) error { return h.verify(record, signature) }

// DB is the host's store, shared by the stages after admission.
func (h *Host) DB() *store.DB { return h.db }

func (h *Host) sign(v any) ([]byte, []byte, error) {
	signer, err := h.loadSigner()
	if err != nil {
		return nil, nil, err
	}
	b, err := canonical.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	sig, err := signer.SignBytes(b)
	return b, sig, err
}

// OSAccount is the operating-system account running oa, recorded beside
// the named person in every host record.
func OSAccount() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
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

// Status is the answer of Status.
type Status struct {
	State  State   `json:"state"`
	Record *Record `json:"record,omitempty"`
	// RecordDigest is the digest of the active record's signed bytes, the
	// admission link of every plan resolved from it.
	RecordDigest string `json:"recordDigest,omitempty"`
	// Why names the refusal when State is not Active.
	Why *blocking.Error `json:"why,omitempty"`
}

// RequireActive is Status for a caller that may go on only with an
// actively admitted release: the status when it is active, else the
// refusal that says why (admission_missing when none is named).
func (h *Host) RequireActive(ctx context.Context, artifactDigest string, now time.Time) (*Status, error) {
	st, err := h.Status(ctx, artifactDigest, now)
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

// Status answers whether the exact release artifactDigest is actively
// admitted at now, and if not exactly why. Every record is verified with
// the host key on read; an older admission is never restored: only the
// package's latest admission can make a release active.
func (h *Host) Status(ctx context.Context, artifactDigest string, now time.Time) (*Status, error) {
	revs, err := h.db.Revocations(ctx, artifactDigest)
	if err != nil {
		return nil, err
	}
	for _, r := range revs {
		if h.verify(r.Record, r.Signature) == nil {
			return &Status{State: Revoked, Why: blocking.New(blocking.ReleaseRevoked, "revoked")}, nil
		}
	}
	mine, err := h.db.AdmissionsOf(ctx, artifactDigest)
	if err != nil {
		return nil, err
	}
	if len(mine) == 0 {
		return &Status{State: Missing, Why: blocking.New(blocking.AdmissionMissing, "no admission for this digest")}, nil
	}
	row := mine[len(mine)-1]
	rec, err := h.readRecord(row)
	if err != nil {
		return &Status{State: Unverifiable, Why: blocking.New(blocking.AdmissionUnverified, "record %s #%d", row.Package, row.Seq)}, nil
	}
	latest, _, err := h.db.LatestAdmission(ctx, row.Package)
	if err != nil {
		return nil, err
	}
	switch {
	case latest.Seq != row.Seq:
		return &Status{State: Mismatched, Record: rec, Why: blocking.New(blocking.AdmissionMismatched, "admission #%d of the package is newer", latest.Seq)}, nil
	case rec.ArtifactDigest != artifactDigest || rec.PolicyDigest != h.Policy.Digest():
		return &Status{State: Mismatched, Record: rec, Why: blocking.New(blocking.AdmissionMismatched, "the record is for another digest or policy")}, nil
	case !now.Before(rec.ExpiresAt):
		return &Status{State: Expired, Record: rec, Why: blocking.New(blocking.AdmissionExpired, "expired at %s", rec.ExpiresAt.Format(time.RFC3339))}, nil
	}
	return &Status{State: Active, Record: rec, RecordDigest: ir.DigestBytes(row.Record)}, nil
}

// readRecord verifies a stored admission and decodes it strictly; the row's
// own columns must agree with what was signed.
func (h *Host) readRecord(row store.Admission) (*Record, error) {
	if err := h.verify(row.Record, row.Signature); err != nil {
		return nil, err
	}
	var rec Record
	if err := canonical.DecodeStrict(row.Record, &rec); err != nil || rec.Type != RecordType || rec.Seq != row.Seq || rec.Package != row.Package || rec.ArtifactDigest != row.ArtifactDigest {
		return nil, errors.New("record does not match its row")
	}
	return &rec, nil
}

// ReadVersion verifies a stored version with the host key and decodes it
// strictly (unknown fields refused) into out. The record's "type" must be
// typ and its "seq" the version's own: a row moved between keys or
// sequence numbers does not read.
func (h *Host) ReadVersion(v *store.Version, typ string, out any) error {
	if err := h.verify(v.Record, v.Signature); err != nil {
		return err
	}
	var head struct {
		Type string `json:"type"`
		Seq  int64  `json:"seq"`
	}
	if err := json.Unmarshal(v.Record, &head); err != nil || head.Type != typ || head.Seq != v.Seq {
		return fmt.Errorf("admit: record is not %s #%d", typ, v.Seq)
	}
	return canonical.DecodeStrict(v.Record, out)
}

// verify checks sig over record with the host key. A signature that
// verified once is remembered by the digest of its exact bytes, so the
// plan can be recomputed before every effect without paying for ECDSA
// on every record each time; only successes are remembered.
func (h *Host) verify(record, sig []byte) error {
	sum := sha256.New()
	sum.Write(binary.BigEndian.AppendUint64(nil, uint64(len(sig)))) // no two splits of one byte string share a key
	sum.Write(sig)
	sum.Write(record)
	var key [sha256.Size]byte
	sum.Sum(key[:0])
	if _, ok := h.verified.Load(key); ok {
		return nil
	}
	if err := h.verifier.VerifyBytes(sig, record); err != nil {
		return err
	}
	h.verified.Store(key, struct{}{})
	return nil
}

// Admissions returns every admission of pkg ("" for all) with each
// record's verification: an edited row reads as unverifiable.
func (h *Host) Admissions(ctx context.Context, pkg string) ([]Listed, error) {
	rows, err := h.db.Admissions(ctx, pkg)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(rows))
	for i, row := range rows {
		out[i] = Listed{Package: row.Package, Seq: row.Seq, ArtifactDigest: row.ArtifactDigest}
		if rec, err := h.readRecord(row); err == nil {
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
func (h *Host) Revoke(ctx context.Context, artifactDigest, reason, by string, now time.Time) (*Revocation, error) {
	if strings.TrimSpace(by) == "" {
		return nil, blocking.New(blocking.AdmitterMissing, "--as is required")
	}
	rev := &Revocation{Type: RevocationType, Host: h.Policy.Host, ArtifactDigest: artifactDigest, Reason: reason, RevokedBy: by, OSAccount: OSAccount(), RevokedAt: now.UTC().Truncate(time.Second)}
	b, sig, err := h.sign(rev)
	if err != nil {
		return nil, err
	}
	return rev, h.db.InsertRevocation(ctx, artifactDigest, b, sig)
}
