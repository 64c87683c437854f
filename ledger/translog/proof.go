package translog

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/oa-dev/oa/blocking"
)

// ProofHeader is the first line of a c2sp.org/tlog-proof.
const ProofHeader = "c2sp.org/tlog-proof@v1"

// Bounds of what VerifyProof reads: a proof of a tree of 2^63 leaves has
// 63 hashes (45 bytes a line); a checkpoint with a few dozen cosignatures
// stays far below 16 KiB.
const (
	MaxProofBytes      = 32 << 10
	MaxCheckpointBytes = 16 << 10
	maxProofHashes     = 63
	maxExtraBytes      = 1 << 10
)

// Proof is a c2sp.org/tlog-proof: the index of an entry, the inclusion
// hashes from the leaf's sibling up, and the signed checkpoint verbatim.
// oa's proofs carry the entry (the receipt digest) as extra data, which
// the proof itself authenticates: the leaf hash is computed from it.
type Proof struct {
	Extra      []byte
	Index      int64
	Hashes     tlog.RecordProof
	Checkpoint []byte
}

// Marshal writes the proof in the c2sp.org/tlog-proof text format.
func (p *Proof) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(ProofHeader + "\n")
	if len(p.Extra) > 0 {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	b.WriteString("index " + strconv.FormatInt(p.Index, 10) + "\n")
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// ParseProof decodes a c2sp.org/tlog-proof strictly and bounded (nothing
// in it is verified yet).
func ParseProof(b []byte) (*Proof, error) {
	bad := func(why string) error {
		return blocking.New(blocking.LogProofInvalid, "the proof %s", why)
	}
	if len(b) > MaxProofBytes {
		return nil, bad("is larger than a proof can be (" + strconv.Itoa(MaxProofBytes) + " bytes)")
	}
	head, cp, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		return nil, bad("has no checkpoint after an empty line")
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != ProofHeader {
		return nil, bad("does not start with " + ProofHeader)
	}
	lines = lines[1:]
	var p Proof
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		e, err := base64.StdEncoding.Strict().DecodeString(strings.TrimPrefix(lines[0], "extra "))
		if err != nil || len(e) == 0 || len(e) > maxExtraBytes {
			return nil, bad("has an extra line that is not base64 of 1 to 1024 bytes")
		}
		p.Extra, lines = e, lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return nil, bad("has no index line")
	}
	idx := strings.TrimPrefix(lines[0], "index ")
	n, err := strconv.ParseInt(idx, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != idx {
		return nil, bad("index is not a decimal without leading zeros")
	}
	p.Index, lines = n, lines[1:]
	if len(lines) > maxProofHashes {
		return nil, bad("has more hashes than any tree needs")
	}
	for _, l := range lines {
		h, err := base64.StdEncoding.Strict().DecodeString(l)
		if err != nil || len(h) != tlog.HashSize {
			return nil, bad("has a line that is not a base64 SHA-256 hash")
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	if len(cp) > MaxCheckpointBytes {
		return nil, bad("has a checkpoint larger than one can be")
	}
	p.Checkpoint = cp
	return &p, nil
}

// Policy is what a verifier trusts: the log's key, and optionally the
// witnesses' keys and how many of them must have cosigned.
type Policy struct {
	// Log is the log's verifier key; its name is the log's origin.
	Log note.Verifier
	// Witnesses are the witnesses' verifier keys (c2sp.org/tlog-
	// cosignature); Quorum of them must have cosigned the checkpoint.
	Witnesses []note.Verifier
	Quorum    int
	// Group, when set, is a c2sp.org/tlog-policy quorum rule the
	// cosigners must also satisfy (groups nested in groups); its
	// witnesses must be among Witnesses to count.
	Group *Group
	// Seen, when set, is a checkpoint of this log seen before: one of
	// the same size with another root is a fork (log_forked).
	Seen *tlog.Tree
}

// Verified is what a proof that verifies proves: that Entry is leaf
// Index of the tree Tree of log Origin, signed by its key and cosigned by
// Cosigners.
type Verified struct {
	Origin    string    `json:"origin"`
	Tree      tlog.Tree `json:"-"`
	Size      int64     `json:"size"`
	Root      string    `json:"root"`
	Index     int64     `json:"index"`
	Entry     string    `json:"entry"`
	Cosigners []string  `json:"cosigners,omitempty"`
}

// VerifyProof checks a c2sp.org/tlog-proof offline: the checkpoint is a
// signed note verifying with the log key (note.Open), its origin the
// key's name; the inclusion hashes lead from entry's record hash at
// Index to the checkpoint's root (tlog.CheckRecord); at least Quorum of
// the witness keys cosigned it; and it does not fork from policy.Seen.
// entry is the entry to prove; nil takes the proof's extra data.
func VerifyProof(b []byte, policy Policy, entry []byte) (*Verified, error) {
	p, err := ParseProof(b)
	if err != nil {
		return nil, err
	}
	switch {
	case entry == nil && p.Extra == nil:
		return nil, blocking.New(blocking.LogProofInvalid, "the proof names no entry (no extra line) and none was given")
	case entry == nil:
		entry = p.Extra
	case p.Extra != nil && !bytes.Equal(entry, p.Extra):
		return nil, blocking.New(blocking.LogProofInvalid, "the proof is of %s, not of %s", cut(string(p.Extra)), cut(string(entry)))
	}
	c, cosigners, err := OpenCheckpoint(p.Checkpoint, policy)
	if err != nil {
		return nil, err
	}
	if p.Index >= c.N {
		return nil, blocking.New(blocking.LogProofInvalid, "the index %d is not below the checkpoint's size %d", p.Index, c.N)
	}
	if err := tlog.CheckRecord(p.Hashes, c.N, c.Hash, p.Index, tlog.RecordHash(entry)); err != nil {
		return nil, blocking.New(blocking.LogProofInvalid, "the inclusion hashes do not lead from %s at index %d to the checkpoint's root", cut(string(entry)), p.Index)
	}
	return &Verified{Origin: c.Origin, Tree: c.Tree, Size: c.N, Root: c.Hash.String(), Index: p.Index, Entry: string(entry), Cosigners: cosigners}, nil
}

// keyID names a verifier key by its name and key hash, as a signature
// line does (a group may hold another Verifier value of the same key).
func keyID(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

// OpenCheckpoint verifies a signed checkpoint with policy: signed by the
// log key, its origin the key's name, cosigned by a quorum of the
// witnesses, not forked from policy.Seen. It returns the checkpoint and
// the names of the witnesses whose cosignatures verified.
func OpenCheckpoint(b []byte, policy Policy) (*torchwood.Checkpoint, []string, error) {
	if policy.Log == nil {
		return nil, nil, blocking.New(blocking.LogKeyInvalid, "no log key to verify the checkpoint with")
	}
	if len(b) > MaxCheckpointBytes {
		return nil, nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint is larger than one can be")
	}
	known := append([]note.Verifier{policy.Log}, policy.Witnesses...)
	n, err := note.Open(b, note.VerifierList(known...))
	if err != nil {
		return nil, nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint does not verify with the log key %s", policy.Log.Name())
	}
	logSigned := false
	var cosigners []string
	verified := map[string]bool{}
	for _, s := range n.Sigs {
		if s.Name == policy.Log.Name() && s.Hash == policy.Log.KeyHash() {
			logSigned = true
			continue
		}
		for _, w := range policy.Witnesses {
			if s.Name == w.Name() && s.Hash == w.KeyHash() {
				cosigners = append(cosigners, s.Name)
				verified[keyID(w)] = true
			}
		}
	}
	if !logSigned {
		return nil, nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint is not signed by the log key %s", policy.Log.Name())
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, nil, blocking.New(blocking.LogCheckpointUnverified, "the signed note is not a checkpoint")
	}
	if c.Origin != policy.Log.Name() {
		return nil, nil, blocking.New(blocking.LogCheckpointUnverified, "the checkpoint is of log %s, not of %s", cut(c.Origin), policy.Log.Name())
	}
	if len(cosigners) < policy.Quorum {
		return nil, nil, blocking.New(blocking.LogWitnessQuorum, "%d of the %d witnesses given cosigned the checkpoint; the quorum is %d", len(cosigners), len(policy.Witnesses), policy.Quorum)
	}
	if g := policy.Group; g != nil && !g.Satisfied(func(w note.Verifier) bool { return verified[keyID(w)] }) {
		return nil, nil, blocking.New(blocking.LogWitnessQuorum, "the %d of the %d witnesses given that cosigned the checkpoint do not satisfy the quorum %s", len(cosigners), len(policy.Witnesses), cut(g.Name))
	}
	if s := policy.Seen; s != nil && s.N == c.N && s.Hash != c.Hash {
		return nil, nil, blocking.New(blocking.LogForked, "the checkpoint of size %d has another root than the one seen before", c.N)
	}
	return &c, cosigners, nil
}
