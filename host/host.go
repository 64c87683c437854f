package host

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sync"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/canonical"
	"github.com/oa-dev/oa/internal/store"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// Files of a host under $OA_HOME.
const (
	PolicyFile  = "policy.cue"
	HostKeyFile = "keys/host.key"
	HostPubFile = "keys/host.pub"
	StateFile   = "state.db"
)

// Host is one opened host: its folder, its policy, its host key and its
// state database. Every stage from admission on works through one.
type Host struct {
	Home   string
	Policy *Policy
	// verifier checks every record read; signer, decrypted only when a
	// record is written (scrypt makes that cost about 0.1 s), signs them.
	verifier *signing.Verifier
	// signerMu guards signer: the runs of a coordinator may need it at
	// once (each first seal of a receipt key pins it).
	signerMu sync.Mutex
	signer   *signing.Signer
	db       *store.DB
	// verified remembers signatures already checked (see verify).
	verified sync.Map
}

// Open opens the host under home: its policy, its host public key and
// its SQLite store. The host private key (cosign's format, no password,
// 0600, the way hosts keep their own keys) is read when a record is signed.
func Open(ctx context.Context, home string) (*Host, error) {
	return OpenWith(ctx, home, OpenOptions{})
}

// OpenOptions change how a host is opened.
type OpenOptions struct {
	// TrustedRoots, when not nil, are the bytes of every trusted root the
	// policy names, by the policy's trusted_root string: the policy's
	// roots are taken from here and never read from files (a host rebuilt
	// from an audit bundle must not read the auditor's files a bundle
	// names). A root the policy names and the map lacks refuses
	// trusted_root_invalid.
	TrustedRoots map[string][]byte
	// WitnessPolicy, read when TrustedRoots is not nil, is the text of
	// the c2sp.org/tlog-policy file the policy's witnessing policy_file
	// names, which is then never read from a file (nil refuses such a
	// policy, policy_witness_invalid).
	WitnessPolicy []byte
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, home string, opts OpenOptions) (*Host, error) {
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
	policy, err := loadPolicy(filepath.Join(home, PolicyFile), opts)
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

// ReadLimits are the size limits of the policy of the host under home
// (its limits section over the defaults), or the defaults when home holds
// no policy: what a command reading a registry or layout applies before
// (or without) opening the host.
func ReadLimits(home string) (oci.Limits, error) {
	path := filepath.Join(home, PolicyFile)
	if _, err := os.Stat(path); err != nil {
		return oci.DefaultLimits(), nil
	}
	p, err := LoadPolicy(path)
	if err != nil {
		return oci.Limits{}, err
	}
	return p.ReadLimits(), nil
}

// ReleaseOptions are Policy.ReleaseOptions of the host under home, read
// without opening the host: transport with the policy's read limits, or
// the defaults when home holds no policy.
func ReleaseOptions(home string, transport oci.OpenOptions) (oci.OpenOptions, error) {
	limits, err := ReadLimits(home)
	transport.Limits = limits
	return transport, err
}

// loadSigner decrypts the host private key once, and checks it is the
// key of the host public key records are verified with.
func (h *Host) loadSigner() (*signing.Signer, error) {
	h.signerMu.Lock()
	defer h.signerMu.Unlock()
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

// Versions is the host's store of versioned signed records, the chains
// several stages share (connections, the registry's signatures, bindings,
// pins, checkpoints, fleet records).
func (h *Host) Versions() *store.Versions { return h.db.Versions() }

// OwnedTrees is the host's record of the process trees its coordinators
// own (see connector), its rows authenticated with key (the coordinator
// secret).
func (h *Host) OwnedTrees(key []byte) *store.OwnedTrees { return h.db.OwnedTrees(key) }

// SignedStamp is the stamp of the host's append-only signed tables: equal
// stamps read the same signed rows.
func (h *Host) SignedStamp(ctx context.Context) (store.Stamp, error) { return h.db.SignedStamp(ctx) }

// Snapshot runs fn in one read transaction of the host's state, so every
// table fn reads through tx is seen at one moment (store.DB.Snapshot):
// how an audit bundle copies the tables of several stages consistently,
// each read by its owner in tx.
func (h *Host) Snapshot(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return h.db.Snapshot(ctx, fn)
}

// Store is the handle the stages' own typed stores are built on (admit's
// admissions, the coordinator's runs); every other use of the host's
// state goes through those stores or the methods above.
func (h *Host) Store() *store.DB { return h.db }

// SignRecord encodes v as canonical JSON and signs those bytes with the
// host key. Every stage keeps its host-signed records this way
// (admissions, connections, bindings, receipts), so one key vouches for
// all host state.
func (h *Host) SignRecord(v any) (record, signature []byte, err error) {
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

// VerifyRecord checks signature over record with the host key. A
// signature that verified once is remembered by the digest of its exact
// bytes, so the plan can be recomputed before every effect without paying
// for ECDSA on every record each time; only successes are remembered.
func (h *Host) VerifyRecord(record, signature []byte) error {
	sum := sha256.New()
	sum.Write(binary.BigEndian.AppendUint64(nil, uint64(len(signature)))) // no two splits of one byte string share a key
	sum.Write(signature)
	sum.Write(record)
	var key [sha256.Size]byte
	sum.Sum(key[:0])
	if _, ok := h.verified.Load(key); ok {
		return nil
	}
	if err := h.verifier.VerifyBytes(signature, record); err != nil {
		return err
	}
	h.verified.Store(key, struct{}{})
	return nil
}

// ReadVersion verifies a stored version with the host key and decodes it
// strictly (unknown fields refused) into out. The record's "type" must be
// typ and its "seq" the version's own: a row moved between keys or
// sequence numbers does not read.
func (h *Host) ReadVersion(v *store.Version, typ string, out any) error {
	if err := h.VerifyRecord(v.Record, v.Signature); err != nil {
		return err
	}
	var head struct {
		Type string `json:"type"`
		Seq  int64  `json:"seq"`
	}
	if err := json.Unmarshal(v.Record, &head); err != nil || head.Type != typ || head.Seq != v.Seq {
		return fmt.Errorf("host: record is not %s #%d", typ, v.Seq)
	}
	return canonical.DecodeStrict(v.Record, out)
}

// OSAccount is the operating-system account running oa, recorded beside
// the named person in every host record.
func OSAccount() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
