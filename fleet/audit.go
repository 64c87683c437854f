package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
	"github.com/oa-dev/oa/internal/atomicfile"
	"github.com/oa-dev/oa/ledger/translog"
	"github.com/oa-dev/oa/oci"
	"github.com/oa-dev/oa/signing"
)

// DefaultAuditStale is AuditOptions.Stale by default: as `oa fleet
// status`'s --stale, three times DefaultStatusRefresh.
const DefaultAuditStale = 15 * time.Minute

// maxAuditState bounds the auditor's state file: a fleet's hosts at well
// under a kilobyte each.
const maxAuditState = 128 << 20

// AuditStateType is the type of the auditor's state file.
const AuditStateType = "oa.fleet.audit-state/v1"

// AuditOptions are the settings of Audit.
type AuditOptions struct {
	Options
	// StateDir holds the auditor's state: the checkpoint it saw last of
	// each host, in audit-<fleet>.json.
	StateDir string
	// Stale is how old a published checkpoint may be (zero is
	// DefaultAuditStale).
	Stale time.Duration
	// Quorum, when above a host's own quorum, is how many of its
	// witnesses must have cosigned.
	Quorum int
}

// Consistency of a host's checkpoint with the one the auditor saw last.
const (
	// ConsistencyFirst: the auditor had seen none.
	ConsistencyFirst = "first"
	// ConsistencySame: the checkpoint seen before, again.
	ConsistencySame = "same"
	// ConsistencyProved: larger, and the published consistency proof
	// from the size seen before verifies.
	ConsistencyProved = "proved"
	// ConsistencyWitnessed: larger, with no proof from the size seen
	// before (the auditor missed a checkpoint between): only its
	// witnesses' cosignatures vouch that it extends the one seen.
	ConsistencyWitnessed = "witnessed"
)

// Problem is one thing wrong with a host's log, in fixed words.
type Problem struct {
	Code   blocking.Code `json:"code"`
	Detail string        `json:"detail"`
}

// HostLog is one host's published log checkpoint as the auditor judged it.
type HostLog struct {
	Host string `json:"host"`
	// Signed is how the document verified (SignedPinned, SignedSelf,
	// Unsigned, NoStatus when nothing is published).
	Signed      string     `json:"signed"`
	Size        int64      `json:"size,omitempty"`
	Root        string     `json:"root,omitempty"`
	Cosigners   []string   `json:"cosigners,omitempty"`
	Quorum      int        `json:"quorum"`
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	// LastSize is the size the auditor saw last (before this audit).
	LastSize    int64     `json:"lastSize,omitempty"`
	Consistency string    `json:"consistency,omitempty"`
	Problems    []Problem `json:"problems"`
}

// Wrong reports whether anything is wrong with the host's log.
func (h HostLog) Wrong() bool { return len(h.Problems) > 0 }

// AuditReport is one audit of a fleet's logs.
type AuditReport struct {
	Fleet string    `json:"fleet"`
	Hosts []HostLog `json:"hosts"`
	// Wrong names the hosts with a problem, in host order.
	Wrong []string `json:"wrong"`

	spec *Spec
}

// Err is the audit's verdict: nil when every host's log holds, else one
// refusal per problem, located at the host in the fleet file.
func (r *AuditReport) Err() error {
	var out blocking.List
	for _, h := range r.Hosts {
		for _, p := range h.Problems {
			out = append(out, blocking.New(p.Code, "host %s: %s", h.Host, p.Detail).At(r.spec.Pos("hosts", h.Host), "hosts."+h.Host))
		}
	}
	return out.Err()
}

// auditState is the auditor's memory, one file per fleet.
type auditState struct {
	Type  string             `json:"type"`
	Fleet string             `json:"fleet"`
	Hosts map[string]seenLog `json:"hosts"`
}

// seenLog is the last checkpoint the auditor accepted from one host,
// with the keys it came under: the host key that signed the document
// and the log key that signed the checkpoint.
type seenLog struct {
	HostKey    string    `json:"hostKey"`
	LogKey     string    `json:"logKey"`
	Size       int64     `json:"size"`
	Root       string    `json:"root"`
	Checkpoint string    `json:"checkpoint"`
	SeenAt     time.Time `json:"seenAt"`
}

// Audit reads every host's published log checkpoint (log-<id>, 16 at a
// time over one pooled client, one manifest read a host), verifies it,
// and holds it to the checkpoint the auditor saw last of that host (kept
// in opts.StateDir, written atomically after the audit): a host that
// publishes nothing, whose document or checkpoint does not verify (or
// comes under another host key or log key than before), whose log forked
// (same size, other root, or a failing consistency proof from the size
// seen), rolled back (smaller), stopped publishing (older than Stale) or
// lacks its witness quorum is named with a blocking code. A host's state
// advances to a checkpoint that verifies and neither forks nor rolls
// back. The report's Err is the verdict; the error is a fault or an
// unreadable state (fleet_audit_state_invalid).
func Audit(ctx context.Context, s *Spec, opts AuditOptions) (*AuditReport, error) {
	if opts.StateDir == "" {
		return nil, blocking.New(blocking.FleetAuditStateInvalid, "no state folder given")
	}
	if opts.Stale <= 0 {
		opts.Stale = DefaultAuditStale
	}
	state, err := readAuditState(opts.StateDir, s.Name)
	if err != nil {
		return nil, err
	}
	target, err := oci.Open(ctx, s.repo, opts.OpenOptions)
	if err != nil {
		return nil, err
	}
	now := opts.now()
	ids := slices.Sorted(maps.Keys(s.Hosts))
	out := make([]HostLog, len(ids))
	next := make([]*seenLog, len(ids))
	err = parallel(ctx, len(ids), func(i int) error {
		id := ids[i]
		var last *seenLog
		if l, ok := state.Hosts[id]; ok {
			last = &l
		}
		doc, err := readDocument(ctx, target, LogArtifactType, LogTag(id))
		if err != nil && err != errMalformed {
			return err
		}
		a := &logAudit{spec: s, id: id, now: now, opts: opts, last: last, out: HostLog{Host: id, Signed: NoStatus, Problems: []Problem{}}}
		if last != nil {
			a.out.LastSize = last.Size
		}
		next[i] = a.check(doc, err == errMalformed)
		out[i] = a.out
		return nil
	})
	if err != nil {
		return nil, err
	}
	r := &AuditReport{Fleet: s.Name, Hosts: out, Wrong: []string{}, spec: s}
	for i, h := range out {
		if h.Wrong() {
			r.Wrong = append(r.Wrong, h.Host)
		}
		if next[i] != nil {
			state.Hosts[ids[i]] = *next[i]
		}
	}
	if err := writeAuditState(opts.StateDir, state); err != nil {
		return nil, err
	}
	return r, nil
}

// logAudit judges one host's published document.
type logAudit struct {
	spec *Spec
	id   string
	now  time.Time
	opts AuditOptions
	last *seenLog
	out  HostLog
}

func (a *logAudit) problem(code blocking.Code, format string, args ...any) {
	a.out.Problems = append(a.out.Problems, Problem{Code: code, Detail: fmt.Sprintf(format, args...)})
}

// check judges doc (nil: nothing published; malformed: something else
// under the tag) and returns the state to keep of the host, nil to keep
// what was there.
func (a *logAudit) check(doc *document, malformed bool) *seenLog {
	switch {
	case malformed:
		a.out.Signed = Unsigned
		a.problem(blocking.FleetLogUnverified, "what is under %s is not a log checkpoint document", LogTag(a.id))
		return nil
	case doc == nil && a.last != nil:
		a.problem(blocking.FleetLogMissing, "it published a checkpoint of size %d before, and now none", a.last.Size)
		return nil
	case doc == nil:
		a.problem(blocking.FleetLogMissing, "it has published no log checkpoint")
		return nil
	}
	var d LogCheckpoint
	if doc.decode(&d) != nil || d.Type != LogType {
		a.out.Signed = Unsigned
		a.problem(blocking.FleetLogUnverified, "the document is not a canonical %s", LogType)
		return nil
	}
	hostKey, signed := a.signedBy(doc)
	a.out.Signed = signed
	switch {
	case signed == Unsigned && a.spec.HostVerifier(a.id) != nil:
		a.problem(blocking.FleetLogUnverified, "the document is not signed by the host key the fleet file pins")
		return nil
	case signed == Unsigned:
		a.problem(blocking.FleetLogUnverified, "the document's signature does not verify with the key it carries")
		return nil
	case d.Fleet != a.spec.Name || d.Host != a.id:
		a.out.Signed = Unsigned
		a.problem(blocking.FleetLogUnverified, "the document is another fleet's or host's")
		return nil
	case a.last != nil && a.last.HostKey != hostKey && signed == SignedSelf:
		a.problem(blocking.FleetLogUnverified, "the document is signed by another host key than the one seen before")
		return nil
	}
	logKey, err := note.NewVerifier(d.LogKey)
	if err != nil || logKey.Name() != translog.Origin(a.id) {
		a.problem(blocking.FleetLogUnverified, "the log key is not an Ed25519 signed-note key of log %s", translog.Origin(a.id))
		return nil
	}
	if a.last != nil && a.last.LogKey != d.LogKey {
		a.problem(blocking.FleetLogUnverified, "the log key is not the one seen before")
		return nil
	}
	witnesses, ok := parseWitnesses(d.Witnesses)
	if !ok || d.Quorum < 0 || d.Quorum > len(witnesses) {
		a.problem(blocking.FleetLogUnverified, "the witnesses or quorum are malformed")
		return nil
	}
	c, cosigners, err := translog.OpenCheckpoint([]byte(d.Checkpoint), translog.Policy{Log: logKey, Witnesses: witnesses})
	if err != nil {
		a.problem(blocking.FleetLogUnverified, "the checkpoint does not verify with the host's log key")
		return nil
	}
	slices.Sort(cosigners)
	cosigners = slices.Compact(cosigners)
	published := d.PublishedAt.UTC()
	a.out.Size, a.out.Root, a.out.Cosigners, a.out.Quorum, a.out.PublishedAt = c.N, c.Hash.String(), cosigners, d.Quorum, &published
	advance := a.consistent(c.Tree, &d)
	switch age := a.now.Sub(published); {
	case age > a.opts.Stale:
		a.problem(blocking.FleetLogStale, "its checkpoint was published %s ago (--stale %s)", age.Truncate(time.Second), a.opts.Stale)
	case age < -maxSkew:
		a.problem(blocking.FleetLogStale, "its checkpoint is dated %s ahead of this clock", (-age).Truncate(time.Second))
	}
	if need := max(d.Quorum, a.opts.Quorum); len(cosigners) < need {
		a.problem(blocking.FleetLogQuorum, "%d of its %d witnesses cosigned checkpoint %d; the quorum is %d", len(cosigners), len(witnesses), c.N, need)
	}
	if !advance {
		return nil
	}
	return &seenLog{HostKey: hostKey, LogKey: d.LogKey, Size: c.N, Root: c.Hash.String(), Checkpoint: d.Checkpoint, SeenAt: a.now}
}

// consistent holds tree to the one seen last and reports whether the
// state may advance to it.
func (a *logAudit) consistent(tree tlog.Tree, d *LogCheckpoint) bool {
	last := a.last
	if last == nil {
		a.out.Consistency = ConsistencyFirst
		return true
	}
	lastRoot, err := tlog.ParseHash(last.Root)
	if err != nil {
		// The state's own root is damaged: judge from here on.
		a.out.Consistency = ConsistencyFirst
		return true
	}
	older := tlog.Tree{N: last.Size, Hash: lastRoot}
	switch {
	case tree.N < older.N:
		a.problem(blocking.FleetLogRolledBack, "its log has %d entries, after %d seen before", tree.N, older.N)
		return false
	case tree.N == older.N && tree.Hash != older.Hash:
		a.problem(blocking.FleetLogForked, "its checkpoint of size %d has another root than the one seen before", tree.N)
		return false
	case tree.N == older.N:
		a.out.Consistency = ConsistencySame
		return true
	case d.PreviousSize != older.N || len(d.Consistency) == 0 && older.N > 0:
		a.out.Consistency = ConsistencyWitnessed
		return true
	}
	proof, ok := parseProof(d.Consistency)
	if !ok {
		a.problem(blocking.FleetLogUnverified, "its consistency proof is malformed")
		return false
	}
	if translog.CheckConsistency(older, tree, proof) != nil {
		a.problem(blocking.FleetLogForked, "its consistency proof does not show size %d extends the size %d seen before", tree.N, older.N)
		return false
	}
	a.out.Consistency = ConsistencyProved
	return true
}

// signedBy verifies doc's signature: with the host key the fleet file
// pins, else the key it carries. It returns the key id and how it
// verified.
func (a *logAudit) signedBy(doc *document) (string, string) {
	if pinned := a.spec.HostVerifier(a.id); pinned != nil {
		if doc.verifiedBy([]*signing.Verifier{pinned}) != nil {
			return pinned.KeyID(), SignedPinned
		}
		return "", Unsigned
	}
	if v, err := signing.LoadVerifier(doc.PublicKey); err == nil && v.KeyID() == doc.KeyID && doc.verifiedBy([]*signing.Verifier{v}) != nil {
		return v.KeyID(), SignedSelf
	}
	return "", Unsigned
}

// parseWitnesses parses witness keys (c2sp.org/tlog-cosignature), at
// most maxLogWitnesses, no two alike.
func parseWitnesses(keys []string) ([]note.Verifier, bool) {
	if len(keys) > maxLogWitnesses {
		return nil, false
	}
	seen := map[string]bool{}
	var out []note.Verifier
	for _, k := range keys {
		v, err := translog.ParseVerifierKey(k)
		if err != nil || seen[v.Name()] {
			return nil, false
		}
		seen[v.Name()] = true
		out = append(out, v)
	}
	return out, true
}

// parseProof decodes a published consistency proof.
func parseProof(lines []string) (tlog.TreeProof, bool) {
	if len(lines) > maxLogProofLines {
		return nil, false
	}
	out := make(tlog.TreeProof, len(lines))
	for i, l := range lines {
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(b) != tlog.HashSize {
			return nil, false
		}
		copy(out[i][:], b)
	}
	return out, true
}

// auditStatePath is the state file of fleet name under dir.
func auditStatePath(dir, name string) string { return filepath.Join(dir, "audit-"+name+".json") }

// readAuditState reads the auditor's state of fleet name (bounded); none
// yet is an empty state.
func readAuditState(dir, name string) (*auditState, error) {
	empty := &auditState{Type: AuditStateType, Fleet: name, Hosts: map[string]seenLog{}}
	f, err := os.Open(auditStatePath(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return nil, blocking.New(blocking.FleetAuditStateInvalid, "the state file cannot be opened")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAuditState+1))
	if err != nil {
		return nil, blocking.New(blocking.FleetAuditStateInvalid, "the state file cannot be read")
	}
	if len(b) > maxAuditState {
		return nil, blocking.New(blocking.FleetAuditStateInvalid, "the state file is larger than %d MiB", maxAuditState>>20)
	}
	var st auditState
	if json.Unmarshal(b, &st) != nil || st.Type != AuditStateType || st.Fleet != name {
		return nil, blocking.New(blocking.FleetAuditStateInvalid, "the state file is not the audit state of fleet %s", name)
	}
	if st.Hosts == nil {
		st.Hosts = map[string]seenLog{}
	}
	return &st, nil
}

// writeAuditState replaces the state file atomically (0600 in a 0700
// folder made when missing).
func writeAuditState(dir string, st *auditState) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return blocking.New(blocking.FleetAuditStateInvalid, "the state folder cannot be made")
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(auditStatePath(dir, st.Fleet), b, 0o600); err != nil {
		return blocking.New(blocking.FleetAuditStateInvalid, "the state file cannot be written")
	}
	return nil
}
